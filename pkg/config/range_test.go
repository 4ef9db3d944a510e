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
	require.Equal(t, 50, ch.Index.FetchBatch)
	require.Equal(t, 4, ch.Index.FetchConcurrency)
	require.Equal(t, 250, ch.Index.WriteBatch)
	require.Equal(t, 5*time.Minute, ch.Index.RangeTimeout)
	require.Equal(t, 30*time.Second, ch.Index.RangeHeartbeat)

	cfg, err = config.Load(config.New(), writeFile(t, minimal+`
    scheduler: {range_size: 0, max_in_flight: 500, heights_per_second: 2500}
    index: {range_concurrency: 3, fetch_batch: 20, fetch_concurrency: 2, write_batch: 100, range_timeout: 2m, range_heartbeat: 10s}
`))
	require.NoError(t, err)
	ch = cfg.Chains["eth"]
	require.False(t, ch.Scheduler.Ranges())
	require.Equal(t, 2500.0, ch.Scheduler.HeightsPerSecond)
	require.Equal(t, config.Index{ActivityTimeout: 2 * time.Minute, WorkerConcurrency: 16, RangeConcurrency: 3,
		FetchBatch: 20, FetchConcurrency: 2, WriteBatch: 100, RangeTimeout: 2 * time.Minute, RangeHeartbeat: 10 * time.Second}, ch.Index)

	for _, tc := range []struct{ yaml, key string }{
		{"scheduler: {range_size: -1}", "chains.eth.scheduler.range_size"},
		{"scheduler: {heights_per_second: -5}", "chains.eth.scheduler.heights_per_second"},
		{"scheduler: {range_size: 9000}", "chains.eth.scheduler.max_in_flight"},
		{"scheduler: {single_heights: 10}", "chains.eth.scheduler.single_heights"},
		{"index: {range_concurrency: 0}", "chains.eth.index.range_concurrency"},
		{"index: {fetch_batch: 0}", "chains.eth.index.fetch_batch"},
		{"index: {fetch_concurrency: 0}", "chains.eth.index.fetch_concurrency"},
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
