package workerconfig

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/spf13/viper"
	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/config"
)

// The generated file must load through the indexer's own config loader,
// which refuses unknown keys.
func TestGeneratedConfigLoads(t *testing.T) {
	base := Config{
		ChainID: "sim", BlockTime: 2 * time.Second, HTTPURL: "http://127.0.0.1:1234", WSURL: "ws://127.0.0.1:1234",
		TemporalHostPort: "127.0.0.1:7233", ClickHouseAddr: "127.0.0.1:9000", Database: "bench",
		MetricsListen: "127.0.0.1:9999", LogLevel: "info",
	}
	load := func(t *testing.T, c Config) (*config.Config, error) {
		t.Helper()
		yml, err := YAML(c)
		require.NoError(t, err)
		path := filepath.Join(t.TempDir(), "worker.yaml")
		require.NoError(t, os.WriteFile(path, yml, 0o644))
		return config.Load(config.New(), path)
	}

	cfg, err := load(t, base)
	require.NoError(t, err)
	ch := cfg.Chains["sim"]
	require.Equal(t, 2*time.Second, ch.BlockTime)
	require.Equal(t, "http://127.0.0.1:1234", ch.Endpoints["local"])
	require.Len(t, ch.Endpoints, 1, "no websocket endpoint without push")
	require.False(t, ch.PushEnabled())
	require.Zero(t, ch.RPC.RateLimit, "the simulated chain is not rate limited")
	require.Equal(t, 2*time.Second, ch.HeadScan.Interval)
	require.Equal(t, "127.0.0.1:9999", cfg.Metrics.Listen)
	require.Equal(t, "bench", cfg.ClickHouse.Database)

	t.Run("push", func(t *testing.T) {
		c := base
		c.Push = true
		cfg, err := load(t, c)
		require.NoError(t, err)
		ch := cfg.Chains["sim"]
		require.True(t, ch.PushEnabled())
		require.Equal(t, "ws://127.0.0.1:1234", ch.Endpoints[ch.Push.Endpoint])
	})

	t.Run("poll", func(t *testing.T) {
		c := base
		c.Poll = true
		cfg, err := load(t, c)
		require.NoError(t, err)
		ch := cfg.Chains["sim"]
		require.True(t, ch.PushEnabled())
		require.Equal(t, "http://127.0.0.1:1234", ch.Endpoints[ch.Push.Endpoint])
		require.Len(t, ch.Endpoints, 1, "polls the one http endpoint")
		require.Equal(t, 500*time.Millisecond, ch.PushPollInterval(), "a quarter of the 2s block time")
		c.Push = true
		_, err = YAML(c)
		require.Error(t, err, "push and poll together")
	})

	t.Run("fast blocks scan every second", func(t *testing.T) {
		c := base
		c.BlockTime = 250 * time.Millisecond
		cfg, err := load(t, c)
		require.NoError(t, err)
		require.Equal(t, time.Second, cfg.Chains["sim"].HeadScan.Interval)
	})

	t.Run("overrides", func(t *testing.T) {
		c := base
		c.Overrides = []string{"index.worker_concurrency=32", "chains.sim.gapscan.interval=30s", "log.level=warn", "push.lag_threshold=5"}
		cfg, err := load(t, c)
		require.NoError(t, err)
		ch := cfg.Chains["sim"]
		require.Equal(t, 32, ch.Index.WorkerConcurrency)
		require.Equal(t, 30*time.Second, ch.GapScan.Interval)
		require.Equal(t, uint64(5), ch.Push.LagThreshold)
		require.Equal(t, "warn", cfg.Log.Level)
	})

	t.Run("range size only when asked", func(t *testing.T) {
		yml, err := YAML(base)
		require.NoError(t, err)
		require.NotContains(t, string(yml), "range_size")
		c := base
		n := 500
		c.RangeSize = &n
		yml, err = YAML(c)
		require.NoError(t, err)
		require.Contains(t, string(yml), "range_size: 500")
		v := viper.New()
		v.SetConfigType("yaml")
		require.NoError(t, v.ReadConfig(bytes.NewReader(yml)))
		require.Equal(t, 500, v.GetInt("chains.sim.scheduler.range_size"))
	})

	t.Run("bad overrides", func(t *testing.T) {
		for _, o := range []string{"novalue", "=1", "index..x=1", "block_time.x=1"} {
			c := base
			c.Overrides = []string{o}
			_, err := YAML(c)
			require.Error(t, err, o)
		}
	})
}
