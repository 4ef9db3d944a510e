package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/spf13/viper"
	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/simchain"
)

func TestPercentileIsNearestRank(t *testing.T) {
	require.Zero(t, percentile(nil, 95))
	require.Equal(t, uint64(7), percentile([]uint64{7}, 95))
	// 1..100 shuffled: p95 is the 95th smallest, p100 the largest.
	xs := make([]uint64, 100)
	for i := range xs {
		xs[i] = uint64((i*37)%100 + 1)
	}
	require.Equal(t, uint64(95), percentile(xs, 95))
	require.Equal(t, uint64(50), percentile(xs, 50))
	require.Equal(t, uint64(100), percentile(xs, 100))
	require.Equal(t, uint64(100), maxOf(xs))
	// Twenty samples, one outlier: p95 is the 19th smallest, not the outlier.
	ys := []uint64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 90}
	require.Equal(t, uint64(2), percentile(ys, 95))
	require.Equal(t, uint64(90), maxOf(ys))
	require.Equal(t, uint64(1), ys[0], "the input must not be sorted in place")
	require.Equal(t, uint64(90), ys[19])
}

// The final line's fields and order are fixed by issue 8.
var lineRE = regexp.MustCompile(`^catchup: n=\d+ heights_per_s=\d+\.\d txs_per_s=\d+\.\d rows_per_s=\d+\.\d lag_p95_blocks=\d+ lag_max_blocks=\d+ missing=\d+ duplicates=\d+ workflows=-?\d+ peak_rss_mb=\d+$`)

func TestResultLine(t *testing.T) {
	r := result{Heights: 3001, Seconds: 100, Txs: 60020, Rows: 3001 + 60020 + 120000,
		LagP95: 2, LagMax: 5, Workflows: 3020, PeakRSSMiB: 71.6}
	got := r.line()
	require.Equal(t, "catchup: n=3001 heights_per_s=30.0 txs_per_s=600.2 rows_per_s=1830.2 lag_p95_blocks=2 lag_max_blocks=5 missing=0 duplicates=0 workflows=3020 peak_rss_mb=72", got)
	require.Regexp(t, lineRE, got)
	require.Equal(t, 0, r.exitCode())

	require.Regexp(t, lineRE, result{Workflows: -1}.line(), "a zero duration must not print NaN or Inf")
	require.Equal(t, 1, result{Missing: 1}.exitCode())
	require.Equal(t, 1, result{Duplicates: 1}.exitCode())
	require.Equal(t, 2, result{TimedOut: true}.exitCode())
	require.Equal(t, 130, result{Interrupted: true, Missing: 1}.exitCode())
}

func TestMismatch(t *testing.T) {
	e := simchain.Expected{Height: 5, Hash: "0xaa", TxCount: 2, LogCount: 3}
	ok := stored{block: true, hash: "0xaa", blockTxs: 2, blockLogs: 3, txs: 2, logs: 3,
		txHashes: 1, logHashes: 1, txHash: "0xaa", logHash: "0xaa"}
	require.Empty(t, mismatch(e, ok))
	for name, s := range map[string]stored{
		"no block":           {},
		"other hash":         func() stored { s := ok; s.hash = "0xbb"; return s }(),
		"block row counts":   func() stored { s := ok; s.blockLogs = 2; return s }(),
		"a transaction less": func() stored { s := ok; s.txs = 1; return s }(),
		"a log more":         func() stored { s := ok; s.logs = 4; return s }(),
		"txs of two blocks":  func() stored { s := ok; s.txHashes = 2; return s }(),
		"logs of another":    func() stored { s := ok; s.logHash = "0xbb"; return s }(),
	} {
		require.NotEmpty(t, mismatch(e, s), name)
	}
	// An empty block has no transaction or log rows to compare hashes of.
	empty := simchain.Expected{Hash: "0xcc"}
	require.Empty(t, mismatch(empty, stored{block: true, hash: "0xcc"}))
}

func TestDuplicates(t *testing.T) {
	v := verification{DistinctBlocks: 100, BlockRows: 100, MarkRows: 100, DistinctMarks: 100}
	require.Zero(t, duplicates(100, v))
	require.Zero(t, duplicates(-1, v), "no counter: rows alone")
	require.Zero(t, duplicates(90, v), "a counter below the heights stored is not a negative duplicate")
	require.Equal(t, uint64(3), duplicates(103, v), "three writes more than heights")
	v.MarkRows = 105
	require.Equal(t, uint64(5), duplicates(103, v), "unmerged marks show more")
	v.BlockRows = 107
	require.Equal(t, uint64(7), duplicates(-1, v))
}

// The generated file must load through the indexer's own config loader,
// which refuses unknown keys.
func TestGeneratedConfigLoads(t *testing.T) {
	base := workerConfig{
		ChainID: "sim", BlockTime: 2 * time.Second, HTTPURL: "http://127.0.0.1:1234", WSURL: "ws://127.0.0.1:1234",
		TemporalHostPort: "127.0.0.1:7233", ClickHouseAddr: "127.0.0.1:9000", Database: "bench",
		MetricsListen: "127.0.0.1:9999", LogLevel: "info",
	}
	load := func(t *testing.T, c workerConfig) (*config.Config, error) {
		t.Helper()
		yml, err := yamlOf(c)
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
		yml, err := yamlOf(base)
		require.NoError(t, err)
		require.NotContains(t, string(yml), "range_size")
		c := base
		n := 500
		c.RangeSize = &n
		yml, err = yamlOf(c)
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
			_, err := yamlOf(c)
			require.Error(t, err, o)
		}
	})
}

func TestLiveEdge(t *testing.T) {
	for bt, want := range map[time.Duration]uint64{
		12 * time.Second: 1, 2 * time.Second: 1, time.Second: 1,
		500 * time.Millisecond: 2, 300 * time.Millisecond: 4, 250 * time.Millisecond: 4,
	} {
		require.Equal(t, want, liveEdge(bt), bt)
	}
}

// The CPU line adds utime and stime of /proc/<pid>/stat, counting fields
// from the command name's closing parenthesis (a name may hold both).
func TestStatCPUTicks(t *testing.T) {
	line := "4242 (clickhouse (x) y) S 1 4242 4242 0 -1 4194560 100 0 0 0 1234 567 0 0 20 0 30 0 100 0 0"
	got, err := statCPUTicks(line)
	require.NoError(t, err)
	require.Equal(t, uint64(1234+567), got)
	_, err = statCPUTicks("4242 (short) S 1 2")
	require.Error(t, err)

	// A real stat line parses.
	_, err = cpuSeconds(os.Getpid())
	require.NoError(t, err)
}
