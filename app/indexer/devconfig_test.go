package main

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/config"
)

// The file dev writes loads through the real loader, with the stack's
// addresses and the one chain it runs (here the simulated chain, built
// from the example's anvil entry), the rest of the example kept.
func TestDevConfigLoads(t *testing.T) {
	src := filepath.Join("..", "..", "config.example.yaml")
	cfg, err := config.Load(config.New(), src)
	require.NoError(t, err)
	ch := cfg.Chains[devChainID]
	ch.Endpoints = map[string]string{"local": "http://127.0.0.1:18545", "ws": "ws://127.0.0.1:18545"}
	ch.BlockTime = 2 * time.Second
	ch.ExpectedChainID = 4242
	ch.RPC.RateLimit = 0
	cfg.Temporal.HostPort = "127.0.0.1:17233"
	cfg.ClickHouse.Addr = "127.0.0.1:19000"

	path := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, writeDevConfig(path, src, cfg, simChainID, ch))
	got, err := config.Load(config.New(), path)
	require.NoError(t, err)
	require.Equal(t, []string{simChainID}, got.ChainIDs())
	require.Equal(t, "127.0.0.1:17233", got.Temporal.HostPort)
	require.Equal(t, "127.0.0.1:19000", got.ClickHouse.Addr)
	require.Equal(t, cfg.ClickHouse.Database, got.ClickHouse.Database)
	require.Equal(t, ch, got.Chains[simChainID], "the chain as dev runs it")
}
