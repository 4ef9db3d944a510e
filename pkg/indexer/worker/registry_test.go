package worker

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/registry"
)

func entry(id string, st registry.State, fp string) registry.Entry {
	return registry.Entry{ID: id, Source: registry.SourceRegistry, State: st, Fingerprint: fp}
}

type planned struct {
	kind stepKind
	id   string
}

func kinds(steps []step) []planned {
	var out []planned
	for _, s := range steps {
		out = append(out, planned{s.kind, s.entry.ID})
	}
	return out
}

// What one reconciliation does with each chain, from what runs here and
// what the file and the registry say.
func TestPlanDecisions(t *testing.T) {
	for _, tc := range []struct {
		name    string
		running map[string]runState
		entries []registry.Entry
		want    []planned
	}{
		{"nothing", nil, nil, nil},
		{"a new chain starts", nil, []registry.Entry{entry("a", registry.Active, "1")}, []planned{{stepStart, "a"}}},
		{"a new paused chain starts too (its workers serve what runs)", nil,
			[]registry.Entry{entry("a", registry.Paused, "1")}, []planned{{stepStart, "a"}}},
		{"unchanged: nothing", map[string]runState{"a": {"1", false}},
			[]registry.Entry{entry("a", registry.Active, "1")}, nil},
		{"changed settings restart", map[string]runState{"a": {"1", false}},
			[]registry.Entry{entry("a", registry.Active, "2")}, []planned{{stepRestart, "a"}}},
		{"changed settings of a paused chain restart it (paused)", map[string]runState{"a": {"1", true}},
			[]registry.Entry{entry("a", registry.Paused, "2")}, []planned{{stepRestart, "a"}}},
		{"pause", map[string]runState{"a": {"1", false}},
			[]registry.Entry{entry("a", registry.Paused, "1")}, []planned{{stepPause, "a"}}},
		{"resume", map[string]runState{"a": {"1", true}},
			[]registry.Entry{entry("a", registry.Active, "1")}, []planned{{stepResume, "a"}}},
		{"a paused chain is kept paused at every poll", map[string]runState{"a": {"1", true}},
			[]registry.Entry{entry("a", registry.Paused, "1")}, []planned{{stepKeepPaused, "a"}}},
		{"remove a running chain", map[string]runState{"a": {"1", true}},
			[]registry.Entry{entry("a", registry.Removed, "1")}, []planned{{stepRemove, "a"}}},
		{"a removed chain not running here: nothing (whoever ran it cleans up)", nil,
			[]registry.Entry{entry("a", registry.Removed, "1")}, nil},
		{"a running chain defined nowhere any more is stopped here only", map[string]runState{"gone": {"1", false}},
			nil, []planned{{stepForget, "gone"}}},
		{"an invalid definition is reported, never started", nil,
			[]registry.Entry{{ID: "bad", State: registry.Active, Err: errors.New("bad"), Fingerprint: "x"}}, []planned{{stepInvalid, "bad"}}},
		{"an invalid update leaves the running chain alone", map[string]runState{"bad": {"1", false}},
			[]registry.Entry{{ID: "bad", State: registry.Active, Err: errors.New("bad"), Fingerprint: "2"}}, []planned{{stepInvalid, "bad"}}},
		{"a removed chain whose stored definition is not valid is still removed, not reported", map[string]runState{"a": {"1", false}},
			[]registry.Entry{{ID: "a", State: registry.Removed, Err: errors.New("no endpoint configured"), Fingerprint: "x"},
				{ID: "b", State: registry.Removed, Err: errors.New("no endpoint configured"), Fingerprint: "y"}},
			[]planned{{stepRemove, "a"}}},
		{"stops come first", map[string]runState{"z": {"1", false}, "y": {"1", false}},
			[]registry.Entry{entry("a", registry.Active, "1"), entry("z", registry.Removed, "1")},
			[]planned{{stepRemove, "z"}, {stepForget, "y"}, {stepStart, "a"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, kinds(plan(tc.running, tc.entries)))
		})
	}
}

// The file's chain wins over a stored definition of the same ID: a paused
// or removed row does not touch it, and it is never restarted.
func TestPlanFileChainWins(t *testing.T) {
	file := map[string]config.Chain{"static": config.DefaultChain()}
	for _, st := range []registry.State{registry.Paused, registry.Removed, registry.Active} {
		entries := registry.Merge(file, []registry.Definition{{ID: "static", State: st, Settings: map[string]any{"block_time": "1s"}, Version: 9}})
		require.Len(t, entries, 1)
		require.True(t, entries[0].Shadowed)
		require.Empty(t, plan(map[string]runState{"static": {"file", false}}, entries), "state %s", st)
	}
}
