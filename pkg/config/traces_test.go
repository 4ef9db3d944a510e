package config_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/config"
)

// traces is off by default; `traces: debug` is short for its mode, the
// section sets everything, and bad values name their key.
func TestTracesSetting(t *testing.T) {
	cfg, err := config.Load(config.New(), writeFile(t, minimal))
	require.NoError(t, err)
	d := cfg.Chains["eth"].Traces
	require.False(t, d.Enabled())
	require.Equal(t, config.TracesOff, d.Mode)
	require.Equal(t, time.Minute, d.Timeout)

	cfg, err = config.Load(config.New(), writeFile(t, minimal+"    traces: debug\n"))
	require.NoError(t, err)
	got := cfg.Chains["eth"].Traces
	require.Equal(t, config.TracesDebug, got.Mode)
	require.True(t, got.Enabled())
	require.Equal(t, d.Batch, got.Batch, "the shorthand keeps the other keys' defaults")

	cfg, err = config.Load(config.New(), writeFile(t, minimal+`    traces:
      mode: parity
      batch: 4
      timeout: 5s
      backfill:
        heights_per_second: 7
`))
	require.NoError(t, err)
	got = cfg.Chains["eth"].Traces
	require.Equal(t, config.TracesParity, got.Mode)
	require.Equal(t, 4, got.Batch)
	require.Equal(t, 5*time.Second, got.Timeout)
	require.Equal(t, 7.0, got.Backfill.HeightsPerSecond)
	require.Equal(t, d.Backfill.Batch, got.Backfill.Batch)

	// A registry definition gives the shorthand as a --set value.
	ch, err := config.DecodeChain("x", map[string]any{"endpoints": map[string]any{"a": "http://127.0.0.1:1"}, "traces": "auto"})
	require.NoError(t, err)
	require.Equal(t, config.TracesAuto, ch.Traces.Mode)

	for body, key := range map[string]string{
		"    traces: sometimes\n":                           "chains.eth.traces.mode",
		"    traces: {mode: debug, batch: 0}\n":             "chains.eth.traces.batch",
		"    traces: {mode: debug, timeout: 10ms}\n":        "chains.eth.traces.timeout",
		"    traces: {backfill: {heights_per_second: 0}}\n": "chains.eth.traces.backfill.heights_per_second",
	} {
		_, err := config.Load(config.New(), writeFile(t, minimal+body))
		var ke *config.KeyError
		require.True(t, errors.As(err, &ke), "%s: %v", body, err)
		require.Equal(t, key, ke.Key, body)
	}
}
