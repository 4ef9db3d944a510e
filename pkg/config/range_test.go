package config_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/config"
)

// Range indexing is on by default; its keys load from the file and a bad
// value names its key.
func TestRangeSettings(t *testing.T) {
	cfg, err := config.Load(config.New(), writeFile(t, minimal))
	require.NoError(t, err)
	ch := cfg.Chains["eth"]
	require.Equal(t, config.Scheduler{RateLimit: 100, BatchSize: 100, MaxInFlight: 8000, ContinueAsNewAfter: 10000,
		RangeSize: 1000, SingleHeights: 64}, ch.Scheduler)
	require.True(t, ch.Scheduler.Ranges())
	require.Equal(t, 2, ch.Index.RangeConcurrency)
	require.Equal(t, 50, ch.RPC.FetchBatch)
	require.Equal(t, 4, ch.RPC.FetchConcurrency)
	require.Equal(t, 100, ch.RPC.ReceiptsBatch)
	require.Equal(t, 500, ch.Index.WriteBatch)
	require.Equal(t, 400_000, ch.Index.WriteBatchRows)
	require.Equal(t, 4, ch.Index.BacklogConcurrency)
	require.Equal(t, 5*time.Minute, ch.Index.RangeTimeout)
	require.Equal(t, 10*time.Second, ch.Index.RangeHeartbeat)
	require.Equal(t, 5*time.Second, ch.Index.HeartbeatTimeout)

	cfg, err = config.Load(config.New(), writeFile(t, minimal+`
    scheduler: {range_size: 0, max_in_flight: 500, heights_per_second: 2500}
    index: {range_concurrency: 3, fetch_batch: 20, fetch_concurrency: 2, write_batch: 100, write_batch_rows: 0, range_timeout: 2m, range_heartbeat: 20s, heartbeat_timeout: 3s}
`))
	require.NoError(t, err)
	ch = cfg.Chains["eth"]
	require.False(t, ch.Scheduler.Ranges())
	require.Equal(t, 2500.0, ch.Scheduler.HeightsPerSecond)
	require.Equal(t, config.Index{ActivityTimeout: 2 * time.Minute, HeartbeatTimeout: 3 * time.Second, WorkerConcurrency: 16, BacklogConcurrency: 4, RangeConcurrency: 3,
		WriteBatch: 100, RangeTimeout: 2 * time.Minute, RangeHeartbeat: 20 * time.Second}, ch.Index)
	// index.fetch_batch and index.fetch_concurrency moved to rpc: the old
	// keys still load, as the new ones.
	require.Equal(t, []int{20, 2}, []int{ch.RPC.FetchBatch, ch.RPC.FetchConcurrency})
	cfg, err = config.Load(config.New(), writeFile(t, minimal+`
    rpc: {fetch_batch: 30, fetch_concurrency: 3, receipts_batch: 40}
`))
	require.NoError(t, err)
	ch = cfg.Chains["eth"]
	require.Equal(t, []int{30, 3, 40}, []int{ch.RPC.FetchBatch, ch.RPC.FetchConcurrency, ch.RPC.ReceiptsBatch})

	for _, tc := range []struct{ yaml, key string }{
		{"scheduler: {range_size: -1}", "chains.eth.scheduler.range_size"},
		{"scheduler: {heights_per_second: -5}", "chains.eth.scheduler.heights_per_second"},
		{"scheduler: {range_size: 9000}", "chains.eth.scheduler.max_in_flight"},
		{"scheduler: {single_heights: 10}", "chains.eth.scheduler.single_heights"},
		{"index: {range_concurrency: 0}", "chains.eth.index.range_concurrency"},
		{"index: {heartbeat_timeout: 0s}", "chains.eth.index.heartbeat_timeout"},
		{"index: {activity_timeout: 10s, heartbeat_timeout: 11s}", "chains.eth.index.heartbeat_timeout"},
		{"index: {write_batch_rows: -1}", "chains.eth.index.write_batch_rows"},
		{"index: {backlog_concurrency: -1}", "chains.eth.index.backlog_concurrency"},
		{"index: {fetch_batch: 0}", "chains.eth.rpc.fetch_batch"},
		{"index: {fetch_concurrency: 0}", "chains.eth.rpc.fetch_concurrency"},
		{"rpc: {fetch_batch: 0}", "chains.eth.rpc.fetch_batch"},
		{"rpc: {fetch_concurrency: 0}", "chains.eth.rpc.fetch_concurrency"},
		{"rpc: {receipts_batch: 0}", "chains.eth.rpc.receipts_batch"},
		{"index: {fetch_batch: 10}\n    rpc: {fetch_batch: 20}", "chains.eth.index.fetch_batch"},
		{"index: {write_batch: 0}", "chains.eth.index.write_batch"},
		{"index: {range_heartbeat: 0s}", "chains.eth.index.range_heartbeat"},
		{"index: {range_timeout: 5s}", "chains.eth.index.range_timeout"},
	} {
		_, err := config.Load(config.New(), writeFile(t, minimal+"    "+tc.yaml+"\n"))
		require.Error(t, err, tc.yaml)
		var ke *config.KeyError
		require.True(t, errors.As(err, &ke), tc.yaml)
		require.Equal(t, tc.key, ke.Key, "%s: %v", tc.yaml, err)
	}
	// Without ranges the window and the single heights are the seed's.
	_, err = config.Load(config.New(), writeFile(t, minimal+"    scheduler: {range_size: 0, max_in_flight: 100, single_heights: 0}\n"))
	require.NoError(t, err)
}

// Retry policies load per kind; one that would give up a height, or that
// makes no sense, names its key.
func TestRetrySettings(t *testing.T) {
	cfg, err := config.Load(config.New(), writeFile(t, minimal+`
    retry: {range: {initial_interval: 2s, maximum_interval: 90s}, admin: {maximum_attempts: 8}}
`))
	require.NoError(t, err)
	r := cfg.Chains["eth"].Retry
	require.Equal(t, config.RetryPolicy{InitialInterval: 2 * time.Second, BackoffCoefficient: 2, MaximumInterval: 90 * time.Second}, r.Range)
	require.Equal(t, 8, r.Admin.MaximumAttempts)
	require.Equal(t, config.DefaultRetries().Index, r.Index)
	for _, tc := range []struct{ yaml, key string }{
		{"retry: {index: {maximum_attempts: 3}}", "chains.eth.retry.index.maximum_attempts"},
		{"retry: {range: {maximum_attempts: 1}}", "chains.eth.retry.range.maximum_attempts"},
		{"retry: {local: {initial_interval: 0s}}", "chains.eth.retry.local.initial_interval"},
		{"retry: {prune: {backoff_coefficient: 0.5}}", "chains.eth.retry.prune.backoff_coefficient"},
		{"retry: {aggregate: {maximum_interval: 1ms}}", "chains.eth.retry.aggregate.maximum_interval"},
		{"retry: {admin: {maximum_attempts: -1}}", "chains.eth.retry.admin.maximum_attempts"},
	} {
		_, err := config.Load(config.New(), writeFile(t, minimal+"    "+tc.yaml+"\n"))
		var ke *config.KeyError
		require.True(t, errors.As(err, &ke), "%s: %v", tc.yaml, err)
		require.Equal(t, tc.key, ke.Key, "%s: %v", tc.yaml, err)
	}
}
