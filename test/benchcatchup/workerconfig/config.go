// Package workerconfig writes the configuration file of the worker that
// bench-catchup runs as a subprocess: the indexer's defaults for one
// simulated chain, except where the benchmark measures something else than
// a limiter, with the -set overrides laid over it.
package workerconfig

import (
	"fmt"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/tideline-dev/tideline/pkg/registry"
)

// Config is what the generated worker configuration depends on.
type Config struct {
	ChainID        string
	EVMChainID     uint64 // the simulated chain's eth_chainId: expected_chain_id
	BlockTime      time.Duration
	HTTPURL, WSURL string
	// Push follows the chain's new heads over the websocket endpoint;
	// Poll by polling the http one (push.endpoint names it). At most one.
	Push, Poll bool
	// RangeSize is scheduler.range_size; nil leaves the key out, so the
	// config runs on code that does not know the key (the loader refuses
	// unknown keys) and otherwise takes the indexer's own default.
	RangeSize        *int
	TemporalHostPort string
	ClickHouseAddr   string
	Database         string
	MetricsListen    string
	LogLevel         string
	// Overrides are extra `key=value` settings laid over the generated
	// ones, in order (see applyOverride for where a key lands).
	Overrides []string
}

// topLevelKeys are the sections of the config file outside `chains`; an
// override key starting with one of them is taken as an absolute path.
var topLevelKeys = map[string]bool{"log": true, "metrics": true, "temporal": true, "clickhouse": true, "chains": true}

// YAML renders the worker's configuration file.
//
// The chain settings are the indexer's defaults except where the benchmark
// measures something else than a limiter:
//   - rpc.rate_limit 0 (unlimited): the simulated chain is local and must not
//     be what the run waits for;
//   - scheduler.rate_limit 10000: the catch-up is paced by the in-flight
//     window and the stack, as in BenchmarkCatchupEndToEnd, not by the
//     start budget meant to protect a real node;
//   - headscan.interval one block time (at least 1 s): a chain with 2 s
//     blocks is configured to look for new heads every block, which is what
//     the live lag target assumes.
//
// Everything can be changed with Overrides.
func YAML(c Config) ([]byte, error) {
	scan := c.BlockTime
	if scan < time.Second {
		scan = time.Second
	}
	endpoints := map[string]any{"local": c.HTTPURL}
	push := map[string]any{"endpoint": ""}
	switch {
	case c.Push && c.Poll:
		return nil, fmt.Errorf("push and poll are exclusive: the chain has one push endpoint")
	case c.Push:
		endpoints["ws"] = c.WSURL
		push["endpoint"] = "ws"
	case c.Poll:
		push["endpoint"] = "local"
	}
	scheduler := map[string]any{"rate_limit": 10000}
	if c.RangeSize != nil {
		scheduler["range_size"] = *c.RangeSize
	}
	chainCfg := map[string]any{
		"type":         "ethereum",
		"block_time":   c.BlockTime.String(),
		"start_height": 0,
		"endpoints":    endpoints,
		// Checked as a user's config would have it: one eth_chainId in
		// every batch of blocks and every head request.
		"expected_chain_id": c.EVMChainID,
		"rpc":               map[string]any{"rate_limit": 0},
		"headscan":          map[string]any{"interval": scan.String()},
		"scheduler":         scheduler,
		"push":              push,
	}
	root := map[string]any{
		"log":     map[string]any{"format": "json", "level": c.LogLevel},
		"metrics": map[string]any{"listen": c.MetricsListen},
		"temporal": map[string]any{
			"host_port": c.TemporalHostPort,
			"namespace": "default",
		},
		"clickhouse": map[string]any{
			"addr":          c.ClickHouseAddr,
			"database":      c.Database,
			"username":      "default",
			"dial_timeout":  "5s",
			"query_timeout": "2m",
		},
		"chains": map[string]any{c.ChainID: chainCfg},
	}
	for _, o := range c.Overrides {
		if err := applyOverride(root, c.ChainID, o); err != nil {
			return nil, err
		}
	}
	return yaml.Marshal(root)
}

// applyOverride sets one `key=value` in root. A key whose first part is a
// top-level section (log, metrics, temporal, clickhouse, chains) is a path
// from the root; any other key is relative to the benchmark's chain, so
// `scheduler.range_size=500` and `chains.sim.scheduler.range_size=500` are
// the same. The value is read as a YAML scalar: 500 is a number, 2s a
// string (which the loader turns into a duration), "" an empty string.
func applyOverride(root map[string]any, chainID, kv string) error {
	key, raw, ok := strings.Cut(kv, "=")
	key = strings.TrimSpace(key)
	if !ok || key == "" {
		return fmt.Errorf("-set %q: want key=value", kv)
	}
	if first, _, _ := strings.Cut(key, "."); !topLevelKeys[first] {
		key = "chains." + chainID + "." + key
	}
	var value any
	if err := yaml.Unmarshal([]byte(raw), &value); err != nil {
		return fmt.Errorf("-set %q: value is not a YAML scalar: %w", kv, err)
	}
	if value == nil && strings.TrimSpace(raw) == "" {
		value = ""
	}
	// The same dotted-key walk as a chain definition's settings.
	if err := registry.SetKey(root, key, value); err != nil {
		return fmt.Errorf("-set %q: %w", kv, err)
	}
	return nil
}

// Overrides is the repeatable -set flag: `key=value` settings in order.
type Overrides []string

func (o *Overrides) String() string { return strings.Join(*o, " ") }

func (o *Overrides) Set(v string) error {
	*o = append(*o, v)
	return nil
}

// Traced tells whether the overrides turn the chain's traces on
// (traces=debug, traces.mode=parity, …).
func (o Overrides) Traced() bool {
	on := false
	for _, s := range o {
		k, v, _ := strings.Cut(s, "=")
		if k == "traces" || k == "traces.mode" {
			on = v != "" && v != "off"
		}
	}
	return on
}
