package rpc_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	gethrpc "github.com/ethereum/go-ethereum/rpc"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/internal/testkit"
	"github.com/tideline-dev/tideline/pkg/localstack"
	"github.com/tideline-dev/tideline/pkg/rpc"
)

// revertingInit is contract creation code that reverts with one 32-byte
// word (0x…c0ffee) as its output: eth_call of it is a revert with data.
const revertingInit = "0x7f0000000000000000000000000000000000000000000000000000000000c0ffee60005260206000fd"

// refuseAll is an endpoint that serves no method at all (-32601).
func refuseAll(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var call struct {
			ID json.RawMessage `json:"id"`
		}
		_ = json.NewDecoder(r.Body).Decode(&call)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(call.ID) + `,"error":{"code":-32601,"message":"the method does not exist/is not available"}}`))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// A forwarded call gets the node's answer, or the node's error answer as
// it sent it (a revert's data included), through either request path (with
// and without the chain check); an endpoint that does not serve the
// method is passed over, one that answers with an error is not.
func TestForwardGivesTheNodesAnswer(t *testing.T) {
	node, err := localstack.StartAnvil(t.TempDir(), localstack.AnvilOptions{})
	require.NoError(t, err)
	t.Cleanup(node.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	raw, err := gethrpc.DialContext(ctx, node.HTTPURL)
	require.NoError(t, err)
	defer raw.Close()
	params := func(vs ...any) []json.RawMessage {
		out := make([]json.RawMessage, len(vs))
		for i, v := range vs {
			out[i], _ = json.Marshal(v)
		}
		return out
	}
	balanceOf := params("0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266", "latest")
	var want json.RawMessage
	require.NoError(t, raw.CallContext(ctx, &want, "eth_getBalance", "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266", "latest"))

	for _, checked := range []uint64{0, 31337} {
		reg := prometheus.NewRegistry()
		metrics := rpc.NewMetrics(reg)
		anvil, err := rpc.NewEthereum(ctx, rpc.EthereumConfig{
			ChainID: "local", EndpointName: "anvil", URL: node.HTTPURL, Timeout: 10 * time.Second, MaxAttempts: 2,
			ExpectedChainID: checked,
		}, nil, metrics)
		require.NoError(t, err)
		refusing, err := rpc.NewEthereum(ctx, rpc.EthereumConfig{
			ChainID: "local", EndpointName: "a-refusing", URL: refuseAll(t), Timeout: 10 * time.Second, MaxAttempts: 2,
		}, nil, metrics)
		require.NoError(t, err)
		m, err := rpc.NewMulti("local", []rpc.NamedClient{{Name: "a-refusing", Client: refusing}, {Name: "anvil", Client: anvil}},
			rpc.MultiOptions{}, nil, nil)
		require.NoError(t, err)

		got, err := m.Forward(ctx, "eth_getBalance", balanceOf)
		require.NoError(t, err, "expected_chain_id %d", checked)
		require.JSONEq(t, string(want), string(got))

		_, err = m.Forward(ctx, "eth_call", params(map[string]string{"data": revertingInit}, "latest"))
		var answer *rpc.AnswerError
		require.ErrorAs(t, err, &answer, "expected_chain_id %d", checked)
		require.Equal(t, "anvil", answer.Endpoint)
		require.Equal(t, 3, answer.Code, "execution reverted")
		require.Contains(t, answer.Message, "revert")
		require.JSONEq(t, `"0x0000000000000000000000000000000000000000000000000000000000c0ffee"`, string(answer.Data))

		_, err = m.Forward(ctx, "eth_getBalance", params("0x12", "latest"))
		require.ErrorAs(t, err, &answer, "a parameter the node refuses is its answer too")
		require.Equal(t, "anvil", answer.Endpoint)
		require.Nil(t, answer.Data)
		require.Equal(t, 3.0, testkit.Sum(t, reg, "rpc_requests_total", map[string]string{"endpoint": "a-refusing"}),
			"the refusing endpoint was asked each time and passed over")
		m.Close()
	}
}
