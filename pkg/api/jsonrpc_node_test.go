package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/rpc"
)

// fakeForward answers the node methods a test needs and records each call
// (a batch's calls come side by side).
type fakeForward struct {
	mu     sync.Mutex
	calls  []string
	params map[string]string
}

func (f *fakeForward) forward(_ context.Context, chainID, method string, params []json.RawMessage) (json.RawMessage, error) {
	b, _ := json.Marshal(params)
	f.mu.Lock()
	f.calls = append(f.calls, method)
	f.params[method] = string(b)
	f.mu.Unlock()
	switch method {
	case "eth_getBalance":
		return json.RawMessage(`"0x10"`), nil
	case "eth_chainId":
		return json.RawMessage(`"0x7a69"`), nil
	case "eth_getCode":
		return json.RawMessage(`"0x6000"`), nil
	case "eth_estimateGas":
		return json.RawMessage(`"0x5208"`), nil
	case "eth_getBlockByNumber":
		return json.RawMessage(`{"number":"0x3","hash":"0xignored"}`), nil
	case "eth_call":
		if strings.Contains(string(b), totalSupplySelector) {
			return json.RawMessage(`"0x` + strings.Repeat("0", 61) + `3e8"`), nil // 1000
		}
		return nil, &rpc.AnswerError{Endpoint: "main", Method: method, Code: 3, Message: "execution reverted", Data: json.RawMessage(`"0xdead"`)}
	}
	return nil, &rpc.TransientError{Method: method, Endpoint: "main", Attempts: 5, Err: errors.New("no answer in time")}
}

// State goes to the node, as the client sent it; the node's error answer
// comes back as it sent it; only the listed methods go.
func TestJSONRPCPassesStateToTheNode(t *testing.T) {
	f := &fakeForward{params: map[string]string{}}
	a := newTestAPI(t, config.API{}, func(o *Options) { o.Forward = f.forward })
	a.write(t, sampleChain(6))

	require.Equal(t, "0x10", a.rpcOK(t, "eth_getBalance", addrA, "0x5"))
	require.JSONEq(t, `["`+addrA+`","0x5"]`, f.params["eth_getBalance"])
	r := a.rpc(t, "eth_call", map[string]string{"to": addrB, "data": "0x"}, "latest")
	require.Equal(t, &rpcError{Code: 3, Message: "execution reverted", Data: json.RawMessage(`"0xdead"`)}, r.Error)
	// ots_hasCode's block as Otterscan sends it, a JSON number, goes to
	// eth_getCode as a quantity (a node refuses the number); a tag or a
	// quantity as given.
	require.Equal(t, true, a.rpcOK(t, "ots_hasCode", addrA, 5))
	require.JSONEq(t, `["`+addrA+`","0x5"]`, f.params["eth_getCode"])
	require.Equal(t, true, a.rpcOK(t, "ots_hasCode", addrA, "latest"))
	require.JSONEq(t, `["`+addrA+`","latest"]`, f.params["eth_getCode"])
	code, msg := a.rpcErr(t, "eth_gasPrice")
	require.Equal(t, rpcServerError, code)
	require.Equal(t, "the chain's endpoints did not answer eth_gasPrice; retry later", msg, "no endpoint named, no detail")
	code, _ = a.rpcErr(t, "eth_sendRawTransaction", "0x00")
	require.Equal(t, rpcMethodNotFound, code, "not listed by default")
	require.NotContains(t, f.calls, "eth_sendRawTransaction")

	// Without expected_chain_id the node says the chain's id; the tags
	// only the node knows name a height the index answers for.
	require.Equal(t, "0x7a69", a.rpcOK(t, "eth_chainId"))
	require.Equal(t, "31337", a.rpcOK(t, "net_version"))
	b := a.rpcOK(t, "eth_getBlockByNumber", "finalized", false).(map[string]any)
	require.Equal(t, h32('b', 3), b["hash"])
	require.JSONEq(t, `["finalized",false]`, f.params["eth_getBlockByNumber"])
	require.Len(t, a.rpcOK(t, "eth_getLogs", map[string]any{"fromBlock": "safe"}).([]any), 3, "heights 3-5")

	m := a.metrics(t)
	require.Contains(t, m, `api_rpc_calls_total{method="eth_getBalance",outcome="ok"}`)
	require.Contains(t, m, `api_rpc_calls_total{method="eth_call",outcome="client_error"}`)
	require.Contains(t, m, `api_rpc_calls_total{method="eth_gasPrice",outcome="node_unavailable"}`)

	// An operator lists eth_sendRawTransaction to send writes on.
	w := newTestAPI(t, config.API{RPCNodeMethods: append(config.DefaultRPCNodeMethods(), "eth_sendRawTransaction")},
		func(o *Options) { o.Forward = f.forward })
	code, _ = w.rpcErr(t, "eth_sendRawTransaction", "0x00")
	require.Equal(t, rpcServerError, code)
	require.Contains(t, f.calls, "eth_sendRawTransaction")
	// A notification is carried out, and not answered.
	sent := len(f.calls)
	status, body := w.rpcPost(t, testChain, `{"jsonrpc":"2.0","method":"eth_sendRawTransaction","params":["0x01"]}`)
	require.Equal(t, http.StatusNoContent, status)
	require.Empty(t, body)
	require.Len(t, f.calls, sent+1)
	require.JSONEq(t, `["0x01"]`, f.params["eth_sendRawTransaction"])
	// An API that cannot reach nodes serves no node method.
	n := newTestAPI(t, config.API{})
	code, _ = n.rpcErr(t, "eth_getBalance", addrA, "latest")
	require.Equal(t, rpcMethodNotFound, code)
}

func TestJSONRPCNodeMethodsCannotShadowTheIndex(t *testing.T) {
	a := newTestAPI(t, config.API{})
	_, err := New(Options{Config: config.API{RPCNodeMethods: []string{"eth_call", "eth_getLogs"}},
		Chains: map[string]config.Chain{testChain: {}}, Store: a.server.store})
	require.ErrorContains(t, err, "eth_getLogs")
}

// A tracer other than the callTracer re-executes: the node's, when
// listed; refused otherwise, before any read.
func TestJSONRPCOtherTracersGoToTheNodeOrNowhere(t *testing.T) {
	f := &fakeForward{params: map[string]string{}}
	prestate := map[string]any{"tracer": "prestateTracer"}
	a := newTestAPI(t, config.API{}, func(o *Options) { o.Forward = f.forward })
	a.write(t, sampleChain(2))
	code, msg := a.rpcErr(t, "debug_traceTransaction", h32('a', 0), prestate)
	require.Equal(t, rpcInvalidParams, code)
	require.Contains(t, msg, "only the callTracer")
	code, _ = a.rpcErr(t, "debug_traceBlockByNumber", "0x1", map[string]any{"tracer": "callTracer", "tracerConfig": map[string]any{"withLog": true}})
	require.Equal(t, rpcInvalidParams, code, "logs in frames are not stored")
	require.Empty(t, f.calls)

	listed := newTestAPI(t, config.API{RPCNodeMethods: []string{"debug_traceTransaction"}}, func(o *Options) { o.Forward = f.forward })
	listed.write(t, sampleChain(2))
	code, _ = listed.rpcErr(t, "debug_traceTransaction", h32('a', 0), prestate)
	require.Equal(t, rpcServerError, code, "the fake node does not answer it")
	require.Equal(t, []string{"debug_traceTransaction"}, f.calls)
	require.JSONEq(t, `["`+h32('a', 0)+`",{"tracer":"prestateTracer"}]`, f.params["debug_traceTransaction"])
	// The callTracer is the index's: without traces indexed, it says so.
	code, msg = listed.rpcErr(t, "debug_traceTransaction", h32('a', 0), map[string]any{"tracer": "callTracer"})
	require.Equal(t, rpcServerError, code)
	require.Contains(t, msg, "traces")
	require.Len(t, f.calls, 1)
}
