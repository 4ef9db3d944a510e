package localstack

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// rpcHead asks a node for eth_blockNumber over plain HTTP.
func rpcHead(t *testing.T, url string) uint64 {
	t.Helper()
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}`)
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	var msg struct{ Result string }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&msg))
	n, err := strconv.ParseUint(strings.TrimPrefix(msg.Result, "0x"), 16, 64)
	require.NoError(t, err)
	return n
}

func TestStartAnvil(t *testing.T) {
	dir := t.TempDir()
	node, err := StartAnvil(dir, AnvilOptions{BlockTime: 200 * time.Millisecond, ChainID: 4242})
	require.NoError(t, err)
	t.Cleanup(node.Stop)
	require.True(t, strings.HasPrefix(node.HTTPURL, "http://127.0.0.1:"))
	require.True(t, strings.HasPrefix(node.WSURL, "ws://127.0.0.1:"))

	// Interval mining: the head moves without transactions.
	first := rpcHead(t, node.HTTPURL)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for rpcHead(t, node.HTTPURL) <= first {
		select {
		case <-ctx.Done():
			t.Fatal("anvil did not mine with a block time")
		case <-time.After(50 * time.Millisecond):
		}
	}
	require.NoError(t, WaitTCP(ctx, strings.TrimPrefix(node.WSURL, "ws://")))

	node.Stop()
	require.True(t, node.Process.Exited())
	require.FileExists(t, node.Process.LogPath)
}

func TestStartAnvilFixedPortInUse(t *testing.T) {
	node, err := StartAnvil(t.TempDir(), AnvilOptions{})
	require.NoError(t, err)
	t.Cleanup(node.Stop)
	port, err := strconv.Atoi(node.HTTPURL[strings.LastIndex(node.HTTPURL, ":")+1:])
	require.NoError(t, err)

	_, err = StartAnvil(t.TempDir(), AnvilOptions{Port: port})
	require.Error(t, err, "a second anvil on a taken port must fail, not hang")
}

func TestNodeToolMissing(t *testing.T) {
	t.Setenv("TIDELINE_HOME", t.TempDir())
	t.Setenv("PATH", t.TempDir())
	_, err := StartAnvil(t.TempDir(), AnvilOptions{})
	require.ErrorIs(t, err, ErrToolMissing)
	_, err = StartGethDev(t.TempDir(), GethOptions{})
	require.ErrorIs(t, err, ErrToolMissing)
}
