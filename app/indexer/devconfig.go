package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/tideline-dev/tideline/pkg/config"
)

// writeDevConfig writes the dev stack's effective configuration to path:
// the file the stack was started with (src, may be empty), with the
// addresses the stack chose (Temporal, ClickHouse on a random port) and
// the one chain it runs, under its ID, with the settings dev replaced. The
// other commands then reach the stack with `--config path` (`indexer
// status`, `indexer chain …`): the file's own addresses name no running
// service. Dev's endpoints are local, so the file holds no secret.
func writeDevConfig(path, src string, cfg *config.Config, chainID string, ch config.Chain) error {
	doc := map[string]any{}
	if src != "" {
		b, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		if err := yaml.Unmarshal(b, &doc); err != nil {
			return fmt.Errorf("%s: %w", src, err)
		}
		if doc == nil {
			doc = map[string]any{}
		}
	}
	// The chain's settings as the file has them (dev took them from the
	// anvil entry, or the sim entry when there is one), then dev's.
	chains, _ := doc["chains"].(map[string]any)
	raw, _ := chains[chainID].(map[string]any)
	if raw == nil {
		raw, _ = chains[devChainID].(map[string]any)
	}
	if raw == nil {
		raw = map[string]any{}
	}
	endpoints := map[string]any{}
	for name, url := range ch.Endpoints {
		endpoints[name] = url
	}
	set(raw, "endpoints", endpoints)
	set(raw, "block_time", ch.BlockTime.String())
	set(raw, "expected_chain_id", ch.ExpectedChainID)
	set(raw, "rpc.rate_limit", ch.RPC.RateLimit)
	doc["chains"] = map[string]any{chainID: raw}
	set(doc, "temporal.host_port", cfg.Temporal.HostPort)
	set(doc, "clickhouse.addr", cfg.ClickHouse.Addr)
	b, err := yaml.Marshal(doc)
	if err != nil {
		return err
	}
	header := fmt.Sprintf("# The dev stack's configuration, written by `indexer dev` at %s;\n# pass it to the other commands: indexer status --config %s\n",
		time.Now().UTC().Format(time.RFC3339), path)
	return os.WriteFile(path, append([]byte(header), b...), 0o644)
}

// set puts value at a dotted key of a nested YAML map.
func set(m map[string]any, dotted string, value any) {
	keys := strings.Split(dotted, ".")
	for _, k := range keys[:len(keys)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
	m[keys[len(keys)-1]] = value
}
