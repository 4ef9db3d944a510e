package config

import "strings"

// movedKeys are chain keys that moved to another section, old → new. A
// chain may still give the old key (a file, or a chain stored in the
// registry before the move): its value is read as the new key. Giving
// both is an error naming them, since the two could disagree.
var movedKeys = map[string]string{
	// The range fetch is pkg/rpc's alone (issue 18): its batching lives
	// with the other rpc settings.
	"index.fetch_batch":       "rpc.fetch_batch",
	"index.fetch_concurrency": "rpc.fetch_concurrency",
}

// moveKeys rewrites the old keys of one chain's settings tree (keys in
// lower case, sections as nested maps) to their new place. prefix is
// chains.<id>, for the error.
func moveKeys(prefix string, settings map[string]any) error {
	for old, moved := range movedKeys {
		oldSection, oldKey, _ := strings.Cut(old, ".")
		from, _ := settings[oldSection].(map[string]any)
		v, ok := from[oldKey]
		if !ok {
			continue
		}
		newSection, newKey, _ := strings.Cut(moved, ".")
		to, _ := settings[newSection].(map[string]any)
		if _, both := to[newKey]; both {
			return &KeyError{Key: prefix + "." + old, Reason: "moved to " + moved + ", which is set too: keep only " + moved}
		}
		if to == nil {
			to = map[string]any{}
			settings[newSection] = to
		}
		to[newKey] = v
		delete(from, oldKey)
	}
	return nil
}
