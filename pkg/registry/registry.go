package registry

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/storage"
)

// Store is where definitions live (storage.ClickHouse).
type Store interface {
	SaveChainRecord(ctx context.Context, rec storage.ChainRecord) (storage.ChainRecord, error)
	ChainRecords(ctx context.Context) ([]storage.ChainRecord, error)
}

// Registry changes the stored definitions by the rules of the commands.
// File holds the chains of the config file: they win over the registry,
// so an ID the file declares cannot be added, changed or removed here.
type Registry struct {
	Store Store
	File  map[string]config.Chain
	// PollInterval is registry.poll_interval: how long workers may take to
	// see a change (it sets how long an ID whose data is being deleted
	// stays reserved).
	PollInterval time.Duration
	// Now is the clock (tests); default time.Now.
	Now func() time.Time
}

// DeclaredInFileError is a command on a chain the config file declares.
type DeclaredInFileError struct{ ID string }

func (e *DeclaredInFileError) Error() string {
	return fmt.Sprintf("chain %q is declared in the config file (chains.%s), which wins over the registry: change it in the file", e.ID, e.ID)
}

// NotFoundError is a command on a chain the registry does not hold (or
// holds as removed).
type NotFoundError struct{ ID string }

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("chain %q is not in the registry (indexer chain list shows what is)", e.ID)
}

// ExistsError is an add of a chain the registry holds already.
type ExistsError struct {
	ID    string
	State State
}

func (e *ExistsError) Error() string {
	return fmt.Sprintf("chain %q is already in the registry (%s): use indexer chain update", e.ID, e.State)
}

// DroppingError is an add of an ID whose data the workers may still be
// deleting after `remove --drop-data`.
type DroppingError struct {
	ID    string
	Until time.Time
}

func (e *DroppingError) Error() string {
	return fmt.Sprintf("chain %q was removed with --drop-data and the workers may still be deleting its rows: add it again after %s",
		e.ID, e.Until.UTC().Format(time.RFC3339))
}

// LiteralSecretError is an endpoint URL that holds a credential written
// out, which the registry does not store (config.LiteralSecrets).
type LiteralSecretError struct {
	Key     string // chains.<id>.endpoints.<name>
	Reasons []string
}

func (e *LiteralSecretError) Error() string {
	return fmt.Sprintf("%s: the URL holds %s; the registry is stored in ClickHouse, so reference the secret as an environment variable of the workers instead (https://host/v2/${MY_KEY}), or pass --allow-literal-url if the URL holds no secret",
		e.Key, strings.Join(e.Reasons, " and "))
}

// CheckSecrets refuses a chain whose endpoint URLs hold literal
// credentials. Errors name the endpoint key, never the URL.
func CheckSecrets(id string, ch config.Chain) error {
	for _, name := range EndpointNames(ch) {
		if why := config.LiteralSecrets(ch.Endpoints[name]); len(why) > 0 {
			return &LiteralSecretError{Key: "chains." + id + ".endpoints." + name, Reasons: why}
		}
	}
	return nil
}

// Definitions reads every stored definition, removed ones too, by ID. A
// row that does not decode (written by a newer version, say) is kept with
// its error in Err, so that it never hides the others.
func (r *Registry) Definitions(ctx context.Context) ([]Definition, error) {
	return Definitions(ctx, r.Store)
}

// Records is what reading the definitions needs: *storage.ClickHouse and
// the query API's read-only *storage.Reader both have it.
type Records interface {
	ChainRecords(ctx context.Context) ([]storage.ChainRecord, error)
}

// Definitions returns every stored definition, one whose settings cannot
// be decoded with its Err set (so that a bad row does not hide the rest).
func Definitions(ctx context.Context, store Records) ([]Definition, error) {
	recs, err := store.ChainRecords(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Definition, 0, len(recs))
	for _, rec := range recs {
		d, err := FromRecord(rec)
		if err != nil {
			d = Definition{ID: rec.ChainID, State: State(rec.State), UpdatedAt: rec.UpdatedAt, Version: rec.Version, Err: err}
		}
		out = append(out, d)
	}
	return out, nil
}

// Get returns the stored definition of id; found is false when none is.
func (r *Registry) Get(ctx context.Context, id string) (Definition, bool, error) {
	defs, err := r.Definitions(ctx)
	if err != nil {
		return Definition{}, false, err
	}
	for _, d := range defs {
		if d.ID == id {
			return d, true, nil
		}
	}
	return Definition{}, false, nil
}

// Prepare checks a definition before it is stored: not declared in the
// file, settings valid as a chain of the file, no literal credential
// (unless allowLiteral). It returns the decoded chain, for the caller to
// check its endpoints.
func (r *Registry) Prepare(id string, settings map[string]any, allowLiteral bool) (config.Chain, error) {
	if _, ok := r.File[id]; ok {
		return config.Chain{}, &DeclaredInFileError{ID: id}
	}
	ch, err := config.DecodeChain(id, settings)
	if err != nil {
		return config.Chain{}, err
	}
	if !allowLiteral {
		if err := CheckSecrets(id, ch); err != nil {
			return config.Chain{}, err
		}
	}
	return ch, nil
}

// CheckAdd tells whether id may be added: not in the file, not held by the
// registry (a removed chain may come back, unless its rows may still be
// being deleted).
func (r *Registry) CheckAdd(ctx context.Context, id string) error {
	if _, ok := r.File[id]; ok {
		return &DeclaredInFileError{ID: id}
	}
	d, found, err := r.Get(ctx, id)
	if err != nil || !found {
		return err
	}
	if d.State != Removed {
		return &ExistsError{ID: id, State: d.State}
	}
	if d.DropData {
		if until := d.UpdatedAt.Add(r.dropWindow()); r.now().Before(until) {
			return &DroppingError{ID: id, Until: until}
		}
	}
	return nil
}

// dropWindow is how long an ID stays reserved after a removal with
// --drop-data: every worker sees the removal within a poll interval and
// deletes the rows it may have written meanwhile; a chain added under the
// same ID before then could lose its first rows to that deletion.
func (r *Registry) dropWindow() time.Duration {
	return max(time.Minute, 3*r.PollInterval)
}

// Add stores a new definition (after Prepare and CheckAdd, and the
// caller's endpoint check), active or paused.
func (r *Registry) Add(ctx context.Context, id string, settings map[string]any, state State) (Definition, error) {
	if err := r.CheckAdd(ctx, id); err != nil {
		return Definition{}, err
	}
	return r.save(ctx, Definition{ID: id, State: state, Settings: settings})
}

// Current returns the stored definition of a chain that is not removed,
// for update, pause, resume and remove.
func (r *Registry) Current(ctx context.Context, id string) (Definition, error) {
	if _, ok := r.File[id]; ok {
		return Definition{}, &DeclaredInFileError{ID: id}
	}
	d, found, err := r.Get(ctx, id)
	if err != nil {
		return Definition{}, err
	}
	if !found || d.State == Removed {
		return Definition{}, &NotFoundError{ID: id}
	}
	if d.Err != nil {
		return Definition{}, d.Err
	}
	return d, nil
}

// Update stores new settings for a chain, in its state.
func (r *Registry) Update(ctx context.Context, id string, settings map[string]any) (Definition, error) {
	d, err := r.Current(ctx, id)
	if err != nil {
		return Definition{}, err
	}
	d.Settings = settings
	return r.save(ctx, d)
}

// SetState pauses, resumes or removes a chain; dropData goes with a
// removal. Pausing a paused chain or resuming an active one is no error
// (changed false). A removed chain may be removed again (to finish a
// removal that failed part-way, or to drop its data after all).
func (r *Registry) SetState(ctx context.Context, id string, state State, dropData bool) (d Definition, changed bool, err error) {
	if state == Removed {
		d, err = r.Removable(ctx, id)
	} else {
		d, err = r.Current(ctx, id)
	}
	if err != nil {
		return d, false, err
	}
	if d.State == state && (state != Removed || d.DropData || !dropData) {
		return d, false, nil
	}
	d.State, d.DropData = state, state == Removed && dropData
	d, err = r.save(ctx, d)
	return d, err == nil, err
}

// Removable is the stored definition of a chain that remove may act on:
// one of the registry, removed or not (a removal may be finished or its
// data dropped after all); a chain of the file is refused.
func (r *Registry) Removable(ctx context.Context, id string) (Definition, error) {
	if _, ok := r.File[id]; ok {
		return Definition{}, &DeclaredInFileError{ID: id}
	}
	d, found, err := r.Get(ctx, id)
	if err != nil {
		return Definition{}, err
	}
	if !found {
		return Definition{}, &NotFoundError{ID: id}
	}
	return d, nil
}

func (r *Registry) save(ctx context.Context, d Definition) (Definition, error) {
	rec, err := d.Record()
	if err != nil {
		return d, err
	}
	saved, err := r.Store.SaveChainRecord(ctx, rec)
	if err != nil {
		return d, err
	}
	d.Version, d.UpdatedAt = saved.Version, saved.UpdatedAt
	return d, nil
}

func (r *Registry) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// Source says where a chain is declared.
type Source string

const (
	SourceFile     Source = "file"
	SourceRegistry Source = "registry"
)

// Entry is one chain as a worker sees it: from the file or the registry,
// its state and settings.
type Entry struct {
	ID     string
	Source Source
	State  State
	// Chain is the decoded chain (unexpanded URLs); valid only when Err is
	// nil.
	Chain config.Chain
	Err   error
	// Fingerprint changes when the settings do ("file" for the file's
	// chains, which never change in a running process).
	Fingerprint string
	DropData    bool
	// Shadowed: the registry holds the ID too, and the file wins.
	Shadowed bool
	// Version is the stored definition's (0 for the file).
	Version uint64
}

// Merge combines the file's chains with the stored definitions, sorted by
// ID. An ID in both is the file's chain (the file wins; Shadowed is set),
// always active: a static deployment stays what its file says. A stored
// definition that does not decode keeps its error in Err.
func Merge(file map[string]config.Chain, defs []Definition) []Entry {
	byID := map[string]Entry{}
	for id, ch := range file {
		byID[id] = Entry{ID: id, Source: SourceFile, State: Active, Chain: ch, Fingerprint: "file"}
	}
	for _, d := range defs {
		if e, ok := byID[d.ID]; ok {
			e.Shadowed = true
			byID[d.ID] = e
			continue
		}
		e := Entry{ID: d.ID, Source: SourceRegistry, State: d.State, DropData: d.DropData,
			Fingerprint: d.Fingerprint(), Version: d.Version, Err: d.Err}
		if e.Err == nil {
			e.Chain, e.Err = d.Chain()
		}
		byID[d.ID] = e
	}
	out := make([]Entry, 0, len(byID))
	for _, e := range byID {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}
