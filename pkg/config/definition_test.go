package config_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/config"
)

// A chain built from settings has the file's defaults under what the
// settings say, and the file's key names in its errors.
func TestDecodeChainLaysSettingsOverDefaults(t *testing.T) {
	ch, err := config.DecodeChain("sepolia", map[string]any{
		"block_time":        "12s",
		"expected_chain_id": "11155111",
		"endpoints":         map[string]any{"Primary": "https://rpc.example.invalid/v3/${SEPOLIA_KEY}"},
		"headscan":          map[string]any{"interval": "2s"},
	})
	require.NoError(t, err)
	require.Equal(t, 12*time.Second, ch.BlockTime)
	require.Equal(t, uint64(11155111), ch.ExpectedChainID)
	require.Equal(t, 2*time.Second, ch.HeadScan.Interval)
	require.Equal(t, config.DefaultChain().HeadScan.CatchupThreshold, ch.HeadScan.CatchupThreshold, "unset keys keep their defaults")
	require.Equal(t, "https://rpc.example.invalid/v3/${SEPOLIA_KEY}", ch.Endpoints["primary"], "endpoint names are lower-cased as in the file; the reference stays")
}

// A chain stored in the registry before index.fetch_batch and
// index.fetch_concurrency moved to rpc still decodes, with their values
// in the new place.
func TestDecodeChainReadsMovedKeys(t *testing.T) {
	ch, err := config.DecodeChain("old", map[string]any{
		"endpoints": map[string]any{"a": "http://127.0.0.1:1"},
		"index":     map[string]any{"fetch_batch": 20, "fetch_concurrency": "2", "write_batch": 100},
	})
	require.NoError(t, err)
	require.Equal(t, 20, ch.RPC.FetchBatch)
	require.Equal(t, 2, ch.RPC.FetchConcurrency)
	require.Equal(t, 100, ch.Index.WriteBatch)
}

func TestDecodeChainNamesTheBadKey(t *testing.T) {
	for _, tc := range []struct {
		name     string
		settings map[string]any
		key      string // the KeyError's key; "" for a decode error
		contains string
	}{
		{"bad value", map[string]any{"block_time": "0s", "endpoints": map[string]any{"a": "http://127.0.0.1:1"}}, "chains.new.block_time", ""},
		{"bad url", map[string]any{"endpoints": map[string]any{"a": "ftp://x"}}, "chains.new.endpoints.a", ""},
		{"no endpoint", map[string]any{}, "chains.new.endpoints", ""},
		{"push endpoint unknown", map[string]any{"endpoints": map[string]any{"a": "http://127.0.0.1:1"}, "push": map[string]any{"endpoint": "b"}}, "chains.new.push.endpoint", ""},
		{"unknown key", map[string]any{"endpoints": map[string]any{"a": "http://127.0.0.1:1"}, "blocktime": "1s"}, "", "chains.new"},
		{"wrong type", map[string]any{"endpoints": map[string]any{"a": "http://127.0.0.1:1"}, "headscan": map[string]any{"interval": "soon"}}, "", "interval"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.DecodeChain("new", tc.settings)
			require.Error(t, err)
			if tc.key != "" {
				var ke *config.KeyError
				require.True(t, errors.As(err, &ke), "%v", err)
				require.Equal(t, tc.key, ke.Key)
				return
			}
			require.Contains(t, err.Error(), tc.contains)
		})
	}
	_, err := config.DecodeChain("Bad ID", map[string]any{"endpoints": map[string]any{"a": "http://127.0.0.1:1"}})
	var ke *config.KeyError
	require.True(t, errors.As(err, &ke))
	require.Equal(t, "chains.Bad ID", ke.Key)
}

// A file may declare no chain now: they may all come from the registry.
func TestNoChainInTheFileIsFine(t *testing.T) {
	cfg, err := config.Load(config.New(), writeFile(t, "log:\n  level: info\n"))
	require.NoError(t, err)
	require.Empty(t, cfg.Chains)
	require.Equal(t, 5*time.Second, cfg.Registry.PollInterval)

	_, err = config.Load(config.New(), writeFile(t, "registry:\n  poll_interval: 100ms\n"))
	var ke *config.KeyError
	require.True(t, errors.As(err, &ke))
	require.Equal(t, "registry.poll_interval", ke.Key)
}
