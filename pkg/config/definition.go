package config

import (
	"fmt"
	"strings"
)

// DecodeChain builds one chain from its settings, given as the tree of
// keys one entry under `chains:` holds in the file (block_time,
// endpoints.<name>, headscan.interval, …), laid over the defaults, and
// validates it exactly as a chain of the file: an unknown key, a value of
// the wrong type or a bad value is an error naming chains.<id>.<key>.
// Chains defined at runtime (pkg/registry) are built by it, so they have
// the file's structure, defaults and rules.
func DecodeChain(id string, settings map[string]any) (Chain, error) {
	prefix := "chains." + id
	if id == "" {
		return Chain{}, &KeyError{Key: "chains", Reason: "empty chain ID"}
	}
	c := DefaultChain()
	settings = lowerKeys(settings)
	if err := moveKeys(prefix, settings); err != nil {
		return Chain{}, err
	}
	if err := decode(settings, &c); err != nil {
		return Chain{}, fmt.Errorf("config: %s: %w", prefix, err)
	}
	if err := ValidateChain(prefix, id, c); err != nil {
		return Chain{}, err
	}
	return c, nil
}

// lowerKeys copies a settings tree with its keys in lower case, as viper
// hands the file's keys over (so `Block_Time` means block_time in both).
// Endpoint names are keys too, and are lower-cased in the file as well.
func lowerKeys(in map[string]any) map[string]any {
	out := make(map[string]any, len(in))
	for k, v := range in {
		if m, ok := v.(map[string]any); ok {
			v = lowerKeys(m)
		}
		out[strings.ToLower(k)] = v
	}
	return out
}
