package registry_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/registry"
	"github.com/tideline-dev/tideline/pkg/storage"
)

// memStore keeps rows as the table does: every save a new version, reads
// the newest per chain. The rules are what these tests are about; the
// table itself is tested in pkg/storage.
type memStore struct {
	rows    map[string]storage.ChainRecord
	version uint64
	now     time.Time
}

func (m *memStore) SaveChainRecord(_ context.Context, r storage.ChainRecord) (storage.ChainRecord, error) {
	m.version++
	r.Version, r.UpdatedAt = m.version, m.now
	m.rows[r.ChainID] = r
	return r, nil
}

func (m *memStore) ChainRecords(context.Context) ([]storage.ChainRecord, error) {
	var out []storage.ChainRecord
	for _, r := range m.rows {
		out = append(out, r)
	}
	return out, nil
}

func settings() map[string]any {
	return map[string]any{
		"block_time":        "1s",
		"expected_chain_id": 31337,
		"endpoints":         map[string]any{"main": "http://127.0.0.1:8545", "keyed": "https://eth.example.invalid/v2/${ETH_KEY}"},
	}
}

func TestSettingsRoundTrip(t *testing.T) {
	in := settings()
	in["start_height"] = uint64(1) << 60 // beyond float64's exact integers
	s, err := registry.EncodeSettings(in)
	require.NoError(t, err)
	out, err := registry.DecodeSettings(s)
	require.NoError(t, err)
	again, err := registry.EncodeSettings(out)
	require.NoError(t, err)
	require.Equal(t, s, again, "the stored form is stable: same settings, same fingerprint")
	ch, err := config.DecodeChain("c", out)
	require.NoError(t, err)
	require.Equal(t, uint64(1)<<60, ch.StartHeight)
	require.Equal(t, uint64(31337), ch.ExpectedChainID)
	require.Equal(t, "https://eth.example.invalid/v2/${ETH_KEY}", ch.Endpoints["keyed"], "references are stored as written")
}

func TestSetAndUnsetKeys(t *testing.T) {
	s := map[string]any{}
	require.NoError(t, registry.SetKey(s, "HeadScan.Interval", "2s"))
	require.NoError(t, registry.SetKey(s, "endpoints.main", "http://127.0.0.1:1"))
	require.Equal(t, map[string]any{"headscan": map[string]any{"interval": "2s"}, "endpoints": map[string]any{"main": "http://127.0.0.1:1"}}, s)
	require.Error(t, registry.SetKey(s, "headscan.interval.x", "1"), "a value is not a section")
	require.Error(t, registry.SetKey(s, "headscan..x", "1"))
	registry.UnsetKey(s, "headscan.interval")
	registry.UnsetKey(s, "not.there")
	require.Equal(t, map[string]any{"endpoints": map[string]any{"main": "http://127.0.0.1:1"}}, s, "an emptied section goes")
}

func TestRulesOfTheCommands(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	st := &memStore{rows: map[string]storage.ChainRecord{}, now: now}
	fileChain := config.DefaultChain()
	r := &registry.Registry{Store: st, File: map[string]config.Chain{"static": fileChain}, PollInterval: 5 * time.Second,
		Now: func() time.Time { return now }}

	// The file wins: its IDs are not the registry's to change.
	var inFile *registry.DeclaredInFileError
	_, err := r.Prepare("static", settings(), false)
	require.True(t, errors.As(err, &inFile), "%v", err)
	_, _, err = r.SetState(ctx, "static", registry.Paused, false)
	require.True(t, errors.As(err, &inFile), "%v", err)

	// Validation names the key.
	bad := settings()
	bad["block_time"] = "-1s"
	_, err = r.Prepare("fresh", bad, false)
	var ke *config.KeyError
	require.True(t, errors.As(err, &ke), "%v", err)
	require.Equal(t, "chains.fresh.block_time", ke.Key)

	// A literal key is refused unless allowed, and the error never shows it.
	keyed := settings()
	keyed["endpoints"].(map[string]any)["keyed"] = "https://eth.example.invalid/v2/9aa3d95b3bc440fa88ea12eaa4456161"
	_, err = r.Prepare("fresh", keyed, false)
	var lit *registry.LiteralSecretError
	require.True(t, errors.As(err, &lit), "%v", err)
	require.Equal(t, "chains.fresh.endpoints.keyed", lit.Key)
	require.NotContains(t, err.Error(), "9aa3d95b")
	_, err = r.Prepare("fresh", keyed, true)
	require.NoError(t, err)

	_, err = r.Prepare("fresh", settings(), false)
	require.NoError(t, err)
	d, err := r.Add(ctx, "fresh", settings(), registry.Active)
	require.NoError(t, err)
	require.Equal(t, registry.Active, d.State)
	_, err = r.Add(ctx, "fresh", settings(), registry.Active)
	var exists *registry.ExistsError
	require.True(t, errors.As(err, &exists), "%v", err)

	d, changed, err := r.SetState(ctx, "fresh", registry.Paused, false)
	require.NoError(t, err)
	require.True(t, changed)
	_, changed, err = r.SetState(ctx, "fresh", registry.Paused, false)
	require.NoError(t, err)
	require.False(t, changed, "pausing a paused chain changes nothing")

	upd := settings()
	upd["block_time"] = "2s"
	d2, err := r.Update(ctx, "fresh", upd)
	require.NoError(t, err)
	require.Equal(t, registry.Paused, d2.State, "an update keeps the state")
	require.NotEqual(t, d.Fingerprint(), d2.Fingerprint())

	_, _, err = r.SetState(ctx, "fresh", registry.Removed, false)
	require.NoError(t, err)
	_, changed, err = r.SetState(ctx, "fresh", registry.Removed, false)
	require.NoError(t, err)
	require.False(t, changed, "removed again: nothing new")
	d, changed, err = r.SetState(ctx, "fresh", registry.Removed, true)
	require.NoError(t, err)
	require.True(t, changed, "removed again, now dropping the data")
	require.True(t, d.DropData)
	_, err = r.Update(ctx, "fresh", upd)
	var nf *registry.NotFoundError
	require.True(t, errors.As(err, &nf), "a removed chain is gone for update: %v", err)

	// Its ID stays reserved while the workers may still delete its rows.
	_, err = r.Add(ctx, "fresh", settings(), registry.Active)
	var dropping *registry.DroppingError
	require.True(t, errors.As(err, &dropping), "%v", err)
	now = now.Add(2 * time.Minute)
	_, err = r.Add(ctx, "fresh", settings(), registry.Active)
	require.NoError(t, err, "and may come back afterwards")
}

// A row that does not decode is reported as such and hides nothing else.
func TestUndecodableRowHidesNothing(t *testing.T) {
	ctx := context.Background()
	st := &memStore{rows: map[string]storage.ChainRecord{
		"future":  {ChainID: "future", State: "draining", Definition: "{}", Version: 7},
		"garbled": {ChainID: "garbled", State: "active", Definition: "{not json", Version: 8},
		"ok":      {ChainID: "ok", State: "active", Definition: `{"endpoints":{"a":"http://127.0.0.1:1"}}`, Version: 9},
	}}
	r := &registry.Registry{Store: st}
	defs, err := r.Definitions(ctx)
	require.NoError(t, err)
	require.Len(t, defs, 3)
	entries := registry.Merge(nil, defs)
	byID := map[string]registry.Entry{}
	for _, e := range entries {
		byID[e.ID] = e
	}
	require.Error(t, byID["future"].Err)
	require.Error(t, byID["garbled"].Err)
	require.Equal(t, uint64(8), byID["garbled"].Version)
	require.NoError(t, byID["ok"].Err)
	_, err = r.Update(ctx, "garbled", settings())
	require.Error(t, err, "a chain whose row does not decode is not updated blindly")
}

func TestMergeFileWins(t *testing.T) {
	file := config.DefaultChain()
	file.Endpoints = map[string]string{"a": "http://127.0.0.1:1"}
	defs := []registry.Definition{
		{ID: "static", State: registry.Paused, Settings: settings(), Version: 3},
		{ID: "dyn", State: registry.Paused, Settings: settings(), Version: 4},
		{ID: "broken", State: registry.Active, Settings: map[string]any{"block_time": "no"}, Version: 5},
		{ID: "old", State: registry.Removed, DropData: true, Settings: settings(), Version: 6},
	}
	got := registry.Merge(map[string]config.Chain{"static": file}, defs)
	require.Len(t, got, 4)
	byID := map[string]registry.Entry{}
	for _, e := range got {
		byID[e.ID] = e
	}
	require.Equal(t, []string{"broken", "dyn", "old", "static"}, []string{got[0].ID, got[1].ID, got[2].ID, got[3].ID})
	s := byID["static"]
	require.Equal(t, registry.SourceFile, s.Source)
	require.Equal(t, registry.Active, s.State, "the file's chain is not paused by a stored row")
	require.True(t, s.Shadowed)
	require.Equal(t, file, s.Chain)

	dyn := byID["dyn"]
	require.Equal(t, registry.SourceRegistry, dyn.Source)
	require.Equal(t, registry.Paused, dyn.State)
	require.NoError(t, dyn.Err)
	require.Equal(t, time.Second, dyn.Chain.BlockTime)
	require.Error(t, byID["broken"].Err)
	require.True(t, byID["old"].DropData)
}

func TestChangesAndSettingsFile(t *testing.T) {
	s, err := registry.ParseSettingsYAML([]byte("block_time: 12s\nexpected_chain_id: 1\nendpoints:\n  main: https://eth.example.invalid/v2/${KEY}\nheadscan:\n  interval: 5s\n"))
	require.NoError(t, err)
	require.NoError(t, registry.Changes{
		Endpoints:     []string{"backup=http://127.0.0.1:8545"},
		Set:           []string{"headscan.catchup_threshold=500", "block_time=1s"},
		Unset:         []string{"headscan.interval"},
		DropEndpoints: []string{"nothere"},
	}.Apply(s))
	ch, err := config.DecodeChain("c", s)
	require.NoError(t, err)
	require.Equal(t, time.Second, ch.BlockTime)
	require.Equal(t, 500, ch.HeadScan.CatchupThreshold)
	require.Equal(t, config.DefaultChain().HeadScan.Interval, ch.HeadScan.Interval, "unset: the default again")
	require.Equal(t, uint64(1), ch.ExpectedChainID)
	require.Equal(t, []string{"backup", "main"}, registry.EndpointNames(ch))
	require.NoError(t, registry.Changes{DropEndpoints: []string{"backup"}}.Apply(s))
	ch, err = config.DecodeChain("c", s)
	require.NoError(t, err)
	require.Equal(t, []string{"main"}, registry.EndpointNames(ch))

	for _, bad := range []registry.Changes{
		{Endpoints: []string{"nourl"}},
		{Endpoints: []string{"a.b=http://x"}},
		{Set: []string{"novalue"}},
		{Set: []string{"endpoints.x=http://secret.invalid/k"}},
	} {
		err := bad.Apply(map[string]any{})
		require.Error(t, err)
		require.NotContains(t, err.Error(), "secret.invalid")
	}
}
