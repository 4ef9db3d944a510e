package localstack

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestStartGethDev needs geth in .tideline/bin (`make tools`); a missing
// binary fails the test with ErrToolMissing rather than skipping it.
func TestStartGethDev(t *testing.T) {
	node, err := StartGethDev(t.TempDir(), GethOptions{Period: time.Second})
	require.NoError(t, err)
	t.Cleanup(node.Stop)

	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"eth_accounts","params":[]}`)
	resp, err := http.Post(node.HTTPURL, "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	var msg struct{ Result []string }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&msg))
	require.NotEmpty(t, msg.Result, "the dev account is listed")

	first := rpcHead(t, node.HTTPURL)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for rpcHead(t, node.HTTPURL) <= first {
		select {
		case <-ctx.Done():
			t.Fatal("geth --dev did not seal a block within its period")
		case <-time.After(100 * time.Millisecond):
		}
	}
	require.NoError(t, WaitTCP(ctx, strings.TrimPrefix(node.WSURL, "ws://")))
}
