package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/config"
)

func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
	return p
}

const minimal = `
chains:
  eth:
    endpoints:
      primary: https://rpc.example.invalid/secret-key-123
`

func TestExampleConfigLoads(t *testing.T) {
	cfg, err := config.Load(config.New(), "../../config.example.yaml")
	require.NoError(t, err)
	ch := cfg.Chains["anvil"]
	require.Equal(t, time.Second, ch.BlockTime)
	require.Equal(t, 1000, ch.HeadScan.CatchupThreshold)
	require.Equal(t, "http://127.0.0.1:8545", ch.Endpoints["local"])
}

func TestDefaultsAreTheSeeds(t *testing.T) {
	cfg, err := config.Load(config.New(), writeFile(t, minimal))
	require.NoError(t, err)
	ch := cfg.Chains["eth"]
	require.Equal(t, 20*time.Second, ch.BlockTime)
	require.Equal(t, 10*time.Second, ch.HeadScan.Interval)
	require.Equal(t, 1000, ch.HeadScan.CatchupThreshold)
	require.Equal(t, 100, ch.HeadScan.BatchSize)
	require.Equal(t, 100.0, ch.Scheduler.RateLimit)
	require.Equal(t, 10000, ch.Scheduler.ContinueAsNewAfter)
	require.Equal(t, "127.0.0.1:7233", cfg.Temporal.HostPort)
	require.Equal(t, "json", cfg.Log.Format)
	require.Equal(t, 24*time.Hour, cfg.ClickHouse.MigrateTimeout)
}

func TestEnvOverridesFile(t *testing.T) {
	t.Setenv("TIDELINE_TEMPORAL_HOST_PORT", "temporal:7233")
	t.Setenv("TIDELINE_CHAINS_ETH_ENDPOINTS_PRIMARY", "https://other.example.invalid/k")
	t.Setenv("TIDELINE_CHAINS_ETH_HEADSCAN_CATCHUP_THRESHOLD", "5000")
	cfg, err := config.Load(config.New(), writeFile(t, minimal+`
    headscan:
      catchup_threshold: 1000
`))
	require.NoError(t, err)
	require.Equal(t, "temporal:7233", cfg.Temporal.HostPort)
	require.Equal(t, "https://other.example.invalid/k", cfg.Chains["eth"].Endpoints["primary"])
	require.Equal(t, 5000, cfg.Chains["eth"].HeadScan.CatchupThreshold)
}

// Bad values fail at start with the key named; URLs (which may hold API
// keys) are never echoed.
func TestBadValuesNameTheKey(t *testing.T) {
	cases := []struct {
		name, body, key string
	}{
		{"unknown chain type", minimal + "    type: bitcoin\n", "chains.eth.type"},
		{"negative threshold", minimal + "    headscan:\n      catchup_threshold: -5\n", "chains.eth.headscan.catchup_threshold"},
		{"zero block time", minimal + "    block_time: 0s\n", "chains.eth.block_time"},
		{"bad endpoint scheme", "chains:\n  eth:\n    endpoints:\n      primary: ftp://secret-key-123@host/\n", "chains.eth.endpoints.primary"},
		{"bad temporal address", minimal + "temporal:\n  host_port: nowhere\n", "temporal.host_port"},
		{"bad log level", minimal + "log:\n  level: loud\n", "log.level"},
		{"bad chain id", "chains:\n  bad!id:\n    endpoints:\n      a: http://x/\n", "chains.bad!id"},
		{"negative rate", minimal + "    scheduler:\n      rate_limit: -1\n", "chains.eth.scheduler.rate_limit"},
		{"negative shared block rate", minimal + "    index:\n      blocks_per_second: -2\n", "chains.eth.index.blocks_per_second"},
		{"bad cluster name", minimal + "clickhouse:\n  cluster: \"a b; DROP\"\n", "clickhouse.cluster"},
		{"unknown compression", minimal + "clickhouse:\n  compression: zip\n", "clickhouse.compression"},
		{"primary without a chain id", minimal + "    chain_id_primary: true\n", "chains.eth.chain_id_primary"},
		{"two primaries of one chain id", "chains:\n  a:\n    expected_chain_id: 5\n    chain_id_primary: true\n    endpoints:\n      p: http://x/\n" +
			"  b:\n    expected_chain_id: 5\n    chain_id_primary: true\n    endpoints:\n      p: http://y/\n", "chains.b.chain_id_primary: chains.a is marked too"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := config.Load(config.New(), writeFile(t, c.body))
			require.Error(t, err)
			require.Contains(t, err.Error(), c.key)
			require.NotContains(t, err.Error(), "secret-key-123")
		})
	}
}

func TestKeyErrorIsTyped(t *testing.T) {
	_, err := config.Load(config.New(), writeFile(t, minimal+"    type: bitcoin\n"))
	var ke *config.KeyError
	require.True(t, errors.As(err, &ke))
	require.Equal(t, "chains.eth.type", ke.Key)
}
