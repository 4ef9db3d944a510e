package config_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/config"
)

const withWS = `
chains:
  eth:
    block_time: 12s
    endpoints:
      primary: https://rpc.example.invalid/secret-key-123
      stream: wss://rpc.example.invalid/secret-key-123
`

func TestPushDefaults(t *testing.T) {
	cfg, err := config.Load(config.New(), writeFile(t, withWS))
	require.NoError(t, err)
	ch := cfg.Chains["eth"]
	require.False(t, ch.PushEnabled(), "push is off unless an endpoint is named")
	require.Equal(t, uint64(2), ch.Push.LagThreshold)
	require.Equal(t, 36*time.Second, ch.PushStallAfter(), "three block times")

	cfg, err = config.Load(config.New(), writeFile(t, withWS+`
    push:
      endpoint: stream
      lag_threshold: 0
      stall_after: 5s
`))
	require.NoError(t, err)
	ch = cfg.Chains["eth"]
	require.True(t, ch.PushEnabled())
	require.Equal(t, "stream", ch.Push.Endpoint)
	require.Equal(t, uint64(0), ch.Push.LagThreshold, "0 (leave nothing to push) is kept, not defaulted")
	require.Equal(t, 5*time.Second, ch.PushStallAfter())
}

// An http(s) endpoint is polled: every quarter block time by default,
// kept within [250ms, 5s], or as configured.
func TestPushPollsAnHTTPEndpoint(t *testing.T) {
	cfg, err := config.Load(config.New(), writeFile(t, withWS+"    push:\n      endpoint: primary\n"))
	require.NoError(t, err)
	ch := cfg.Chains["eth"]
	require.True(t, ch.PushEnabled())
	require.Equal(t, 3*time.Second, ch.PushPollInterval(), "a quarter of 12s")
	for bt, want := range map[time.Duration]time.Duration{
		400 * time.Millisecond: 250 * time.Millisecond,
		2 * time.Second:        500 * time.Millisecond,
		time.Minute:            5 * time.Second,
	} {
		ch.BlockTime = bt
		require.Equal(t, want, ch.PushPollInterval(), "block_time %s", bt)
	}
	cfg, err = config.Load(config.New(), writeFile(t, withWS+"    push:\n      endpoint: primary\n      poll_interval: 700ms\n"))
	require.NoError(t, err)
	require.Equal(t, 700*time.Millisecond, cfg.Chains["eth"].PushPollInterval())
}

func TestExampleConfigEnablesPush(t *testing.T) {
	cfg, err := config.Load(config.New(), "../../config.example.yaml")
	require.NoError(t, err)
	ch := cfg.Chains["anvil"]
	require.True(t, ch.PushEnabled())
	require.Equal(t, "ws://127.0.0.1:8545", ch.Endpoints[ch.Push.Endpoint])
}

func TestBadPushValuesNameTheKey(t *testing.T) {
	cases := []struct {
		name, body, key, reason string
	}{
		{"unknown endpoint", withWS + "    push:\n      endpoint: nope\n", "chains.eth.push.endpoint", `"nope" is not one of endpoints (primary, stream)`},
		{"poll too often", withWS + "    push:\n      endpoint: primary\n      poll_interval: 50ms\n", "chains.eth.push.poll_interval", "at least 100ms"},
		{"negative poll", withWS + "    push:\n      endpoint: primary\n      poll_interval: -1s\n", "chains.eth.push.poll_interval", "at least 100ms"},
		{"negative stall", withWS + "    push:\n      endpoint: stream\n      stall_after: -1s\n", "chains.eth.push.stall_after", "must not be negative"},
		{"negative threshold", withWS + "    push:\n      endpoint: stream\n      lag_threshold: -1\n", "chains.eth", "lag_threshold"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := config.Load(config.New(), writeFile(t, c.body))
			require.Error(t, err)
			require.Contains(t, err.Error(), c.key)
			require.Contains(t, err.Error(), c.reason)
			require.NotContains(t, err.Error(), "secret-key-123")
		})
	}
	_, err := config.Load(config.New(), writeFile(t, withWS+"    push:\n      endpoint: nope\n"))
	var ke *config.KeyError
	require.True(t, errors.As(err, &ke))
	require.Equal(t, "chains.eth.push.endpoint", ke.Key)
}

func TestNegativeUnsignedIsRefused(t *testing.T) {
	_, err := config.Load(config.New(), writeFile(t, minimal+"    start_height: -1\n"))
	require.Error(t, err)
	require.Contains(t, err.Error(), "start_height")
	require.Contains(t, err.Error(), "negative")
}
