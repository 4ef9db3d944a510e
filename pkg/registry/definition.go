// Package registry holds the chains defined at runtime (`indexer chain
// add|update|pause|resume|remove`): their definitions, stored in ClickHouse
// (table chain_registry), with the config file's structure and validation,
// their states, and how they combine with the chains of the config file
// (the file wins). Workers read it every registry.poll_interval and start,
// pause, update or stop chains to match (pkg/indexer/worker).
package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/storage"
)

// State is what the workers do with a chain.
type State string

const (
	// Active: indexed (Schedules running, push followed).
	Active State = "active"
	// Paused: its Schedules and its scheduler are paused and no new height
	// is started; workflows already running finish, and the workers keep
	// serving its task queues for them.
	Paused State = "paused"
	// Removed: stopped everywhere; its rows are kept, or deleted when the
	// removal said so (Definition.DropData).
	Removed State = "removed"
)

func parseState(s string) (State, error) {
	switch st := State(s); st {
	case Active, Paused, Removed:
		return st, nil
	}
	return "", fmt.Errorf("unknown state %q", s)
}

// Definition is one chain defined at runtime, as stored.
type Definition struct {
	ID    string
	State State
	// Settings are the chain's keys as one entry under `chains:` in the
	// config file has them (block_time, endpoints.<name>, …); what is not
	// set takes the default. Endpoint URLs hold ${NAME} references for
	// their secrets, expanded by each worker (config.ExpandURL).
	Settings map[string]any
	// DropData: the removal deletes the chain's rows.
	DropData  bool
	UpdatedAt time.Time
	// Version orders the definition's changes.
	Version uint64
	// Err is set when the stored row does not decode (Definitions); the
	// rest is then unknown.
	Err error
}

// Chain decodes and validates the settings as a chain of the config file
// is (config.DecodeChain): errors name chains.<id>.<key>.
func (d Definition) Chain() (config.Chain, error) {
	return config.DecodeChain(d.ID, d.Settings)
}

// Fingerprint identifies the settings: equal settings, equal fingerprint.
// A worker restarts a chain whose fingerprint changed.
func (d Definition) Fingerprint() string {
	s, err := EncodeSettings(d.Settings)
	if err != nil {
		return "unencodable"
	}
	return s
}

// EncodeSettings is the stored form of settings: JSON, keys sorted (so the
// same settings always encode the same).
func EncodeSettings(settings map[string]any) (string, error) {
	if settings == nil {
		settings = map[string]any{}
	}
	b, err := json.Marshal(settings)
	if err != nil {
		return "", fmt.Errorf("registry: encoding settings: %w", err)
	}
	return string(b), nil
}

// DecodeSettings reads the stored form back. Numbers stay exact
// (json.Number: a chain id or height above 2^53 survives).
func DecodeSettings(s string) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.UseNumber()
	var out map[string]any
	if err := dec.Decode(&out); err != nil {
		return nil, fmt.Errorf("registry: decoding settings: %w", err)
	}
	if out == nil {
		out = map[string]any{}
	}
	return out, nil
}

// FromRecord is the definition a stored row holds.
func FromRecord(r storage.ChainRecord) (Definition, error) {
	st, err := parseState(r.State)
	if err != nil {
		return Definition{}, fmt.Errorf("registry: chain %q: %w", r.ChainID, err)
	}
	settings, err := DecodeSettings(r.Definition)
	if err != nil {
		return Definition{}, fmt.Errorf("registry: chain %q: %w", r.ChainID, err)
	}
	return Definition{
		ID: r.ChainID, State: st, Settings: settings, DropData: r.DropData,
		UpdatedAt: r.UpdatedAt, Version: r.Version,
	}, nil
}

// Record is the row that stores d.
func (d Definition) Record() (storage.ChainRecord, error) {
	s, err := EncodeSettings(d.Settings)
	if err != nil {
		return storage.ChainRecord{}, err
	}
	return storage.ChainRecord{ChainID: d.ID, State: string(d.State), Definition: s, DropData: d.DropData}, nil
}

// SetKey sets a dotted key (headscan.interval, endpoints.main) in a
// settings tree, making the maps on the way; keys are lower-cased as the
// config file's are.
func SetKey(settings map[string]any, dotted string, value any) error {
	parts := strings.Split(strings.ToLower(dotted), ".")
	cur := settings
	for i, p := range parts {
		if p == "" {
			return fmt.Errorf("registry: key %q has an empty part", dotted)
		}
		if i == len(parts)-1 {
			cur[p] = value
			return nil
		}
		next, ok := cur[p].(map[string]any)
		if !ok {
			if _, set := cur[p]; set {
				return fmt.Errorf("registry: key %q: %s is a value, not a section", dotted, strings.Join(parts[:i+1], "."))
			}
			next = map[string]any{}
			cur[p] = next
		}
		cur = next
	}
	return nil
}

// UnsetKey removes a dotted key (its default applies again); a key not
// set is no error. Sections left empty go too.
func UnsetKey(settings map[string]any, dotted string) {
	parts := strings.Split(strings.ToLower(dotted), ".")
	var walk func(m map[string]any, i int)
	walk = func(m map[string]any, i int) {
		if i == len(parts)-1 {
			delete(m, parts[i])
			return
		}
		next, ok := m[parts[i]].(map[string]any)
		if !ok {
			return
		}
		walk(next, i+1)
		if len(next) == 0 {
			delete(m, parts[i])
		}
	}
	walk(settings, 0)
}

// CloneSettings deep-copies a settings tree.
func CloneSettings(in map[string]any) map[string]any {
	out := make(map[string]any, len(in))
	for k, v := range in {
		if m, ok := v.(map[string]any); ok {
			v = CloneSettings(m)
		}
		out[k] = v
	}
	return out
}

// EndpointNames are the chain's endpoint names, sorted: what `list` and
// logs show of endpoints (never the URLs).
func EndpointNames(ch config.Chain) []string {
	names := make([]string, 0, len(ch.Endpoints))
	for n := range ch.Endpoints {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Changes are the edits of a definition given on the command line.
type Changes struct {
	Endpoints     []string // --endpoint name=URL
	DropEndpoints []string // --drop-endpoint name
	Set           []string // --set key=value (dotted keys, as in the file)
	Unset         []string // --unset key (its default applies again)
}

// Apply makes the changes to settings, in the order above; an error names
// the flag and the key, never a URL.
func (c Changes) Apply(settings map[string]any) error {
	for _, kv := range c.Endpoints {
		name, url, ok := strings.Cut(kv, "=")
		if !ok {
			// Not echoed: it may be a bare URL with its key.
			return errors.New("--endpoint: want name=URL")
		}
		if name == "" || url == "" {
			return fmt.Errorf("--endpoint %q: want name=URL", name)
		}
		if strings.Contains(name, ".") {
			return fmt.Errorf("--endpoint %s: an endpoint name has no '.'", name)
		}
		if err := SetKey(settings, "endpoints."+name, url); err != nil {
			return fmt.Errorf("--endpoint %s: %w", name, err)
		}
	}
	for _, name := range c.DropEndpoints {
		UnsetKey(settings, "endpoints."+name)
	}
	for _, kv := range c.Set {
		key, value, ok := strings.Cut(kv, "=")
		if !ok || key == "" {
			return fmt.Errorf("--set %q: want key=value", key)
		}
		if strings.HasPrefix(strings.ToLower(key), "endpoints.") {
			return fmt.Errorf("--set %s: use --endpoint for endpoints", key)
		}
		if err := SetKey(settings, key, value); err != nil {
			return fmt.Errorf("--set %s: %w", key, err)
		}
	}
	for _, key := range c.Unset {
		UnsetKey(settings, key)
	}
	return nil
}

// ParseSettingsYAML reads settings written as one entry under `chains:`
// in the config file (the chain's keys, without the chain ID above them).
func ParseSettingsYAML(b []byte) (map[string]any, error) {
	var out map[string]any
	if err := yaml.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("registry: settings file: %w", err)
	}
	if out == nil {
		out = map[string]any{}
	}
	return out, nil
}
