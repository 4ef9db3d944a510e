package config_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/config"
)

// The aggregator runs on every chain with its defaults; retention is off
// unless a limit is set. Their keys load from the file, and a bad value
// names its key.
func TestAggregatorAndRetentionSettings(t *testing.T) {
	cfg, err := config.Load(config.New(), writeFile(t, minimal))
	require.NoError(t, err)
	ch := cfg.Chains["eth"]
	require.Equal(t, config.Aggregator{Interval: 10 * time.Second, Chunk: 10_000}, ch.Aggregator)
	require.Equal(t, config.Retention{Interval: time.Hour}, ch.Retention)
	require.False(t, ch.Retention.Enabled(), "retention is off by default")
	require.Equal(t, uint64(64+8000), ch.RetentionMargin(), "confirmation_depth + scheduler.max_in_flight")

	cfg, err = config.Load(config.New(), writeFile(t, minimal+`
    aggregator: {interval: 3s, chunk: 500}
    retention: {keep_heights: 100000, keep_days: 30, interval: 30m}
`))
	require.NoError(t, err)
	ch = cfg.Chains["eth"]
	require.Equal(t, config.Aggregator{Interval: 3 * time.Second, Chunk: 500}, ch.Aggregator)
	require.Equal(t, config.Retention{KeepHeights: 100_000, KeepDays: 30, Interval: 30 * time.Minute}, ch.Retention)
	require.True(t, ch.Retention.Enabled())

	cfg, err = config.Load(config.New(), writeFile(t, minimal+"    retention: {keep_days: 7}\n"))
	require.NoError(t, err)
	require.True(t, cfg.Chains["eth"].Retention.Enabled(), "a limit by age alone turns it on")

	for _, tc := range []struct{ yaml, key string }{
		{"aggregator: {interval: 0s}", "chains.eth.aggregator.interval"},
		{"aggregator: {chunk: 0}", "chains.eth.aggregator.chunk"},
		{"aggregator: {chunk: 2000000}", "chains.eth.aggregator.chunk"},
		{"retention: {keep_days: -1}", "chains.eth.retention.keep_days"},
		{"retention: {keep_heights: -5}", "retention.keep_heights"},
		{"retention: {keep_heights: 8063}", "chains.eth.retention.keep_heights"},
		{"retention: {keep_heights: 10000, interval: 30s}", "chains.eth.retention.interval"},
		{"retention: {keep_weeks: 2}", "keep_weeks"},
	} {
		_, err := config.Load(config.New(), writeFile(t, minimal+"    "+tc.yaml+"\n"))
		require.Error(t, err, tc.yaml)
		var ke *config.KeyError
		if errors.As(err, &ke) {
			require.Equal(t, tc.key, ke.Key, "%s: %v", tc.yaml, err)
			continue
		}
		// Decoding errors (a negative unsigned, an unknown key) name the
		// chain and the key in their text.
		require.Contains(t, err.Error(), tc.key, tc.yaml)
	}
	// The margin follows the settings it is made of.
	cfg, err = config.Load(config.New(), writeFile(t, minimal+
		"    confirmation_depth: 4\n    scheduler: {range_size: 0, batch_size: 10, max_in_flight: 10}\n    retention: {keep_heights: 14}\n"))
	require.NoError(t, err)
	require.Equal(t, uint64(14), cfg.Chains["eth"].RetentionMargin())
}
