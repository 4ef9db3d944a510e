package rpc_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/internal/testkit"
	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/rpc"
)

// The fixtures in testdata/traces are real answers, kept as the nodes sent
// them: anvil (both tracers) and geth --dev (the callTracer) for the block
// holding CallTree.run (a CREATE with value, a CREATE2, a CALL with value,
// a DELEGATECALL, a STATICCALL, a STATICCALL reverting "boom" and a
// SELFDESTRUCT) and CallTree.fail (the whole transaction reverts "always"),
// with the block and its receipts. TestRecordTraceFixtures (nodes_traces_test.go)
// records them again.

// fixtureNode answers from the fixtures of one node: its block, receipts
// and trace answers, at the block's height only; a method without a
// fixture is missing (-32601), as on a node without that API.
type fixtureNode struct {
	*httptest.Server
	results map[string]json.RawMessage // by method
	calls   sync.Map                   // method → *atomic.Int64
	edit    func(method string, result json.RawMessage) json.RawMessage
}

func loadFixture(t *testing.T, name string) json.RawMessage {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "traces", name+".json"))
	require.NoError(t, err)
	var answer struct {
		Result json.RawMessage `json:"result"`
	}
	require.NoError(t, json.Unmarshal(b, &answer))
	return answer.Result
}

// newFixtureNode serves node's fixtures ("anvil" or "geth"); traces lists
// the tracers it has.
func newFixtureNode(t *testing.T, node string, traces ...string) *fixtureNode {
	n := &fixtureNode{results: map[string]json.RawMessage{
		"eth_getBlockByNumber": loadFixture(t, node+"-block"),
		"eth_getBlockReceipts": loadFixture(t, node+"-receipts"),
	}}
	for _, tr := range traces {
		method := "debug_traceBlockByNumber"
		if tr == "parity" {
			method = "trace_block"
		}
		n.results[method] = loadFixture(t, node+"-"+tr)
	}
	n.Server = httptest.NewServer(http.HandlerFunc(n.serve))
	t.Cleanup(n.Close)
	return n
}

func (n *fixtureNode) height() string {
	var b struct{ Number string }
	_ = json.Unmarshal(n.results["eth_getBlockByNumber"], &b)
	return b.Number
}

func (n *fixtureNode) hash() string {
	var b struct{ Hash string }
	_ = json.Unmarshal(n.results["eth_getBlockByNumber"], &b)
	return b.Hash
}

func (n *fixtureNode) count(method string) int64 {
	v, _ := n.calls.LoadOrStore(method, new(atomic.Int64))
	return v.(*atomic.Int64).Load()
}

type rpcCall struct {
	ID     json.RawMessage   `json:"id"`
	Method string            `json:"method"`
	Params []json.RawMessage `json:"params"`
}

func (n *fixtureNode) serve(w http.ResponseWriter, r *http.Request) {
	var body json.RawMessage
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	batch := strings.HasPrefix(strings.TrimSpace(string(body)), "[")
	var calls []rpcCall
	if batch {
		_ = json.Unmarshal(body, &calls)
	} else {
		var c rpcCall
		_ = json.Unmarshal(body, &c)
		calls = []rpcCall{c}
	}
	out := make([]map[string]any, len(calls))
	for i, c := range calls {
		v, _ := n.calls.LoadOrStore(c.Method, new(atomic.Int64))
		v.(*atomic.Int64).Add(1)
		out[i] = map[string]any{"jsonrpc": "2.0", "id": c.ID}
		res, ok := n.results[c.Method]
		var height string
		if len(c.Params) > 0 {
			_ = json.Unmarshal(c.Params[0], &height)
		}
		switch {
		case c.Method == "eth_blockNumber":
			out[i]["result"] = n.height()
		case !ok:
			out[i]["error"] = map[string]any{"code": -32601, "message": "the method " + c.Method + " does not exist/is not available"}
		case height != n.height() && height != n.hash():
			out[i]["result"] = nil
			if c.Method == "debug_traceBlockByNumber" {
				delete(out[i], "result")
				out[i]["error"] = map[string]any{"code": -32000, "message": "block not found"}
			}
		default:
			if n.edit != nil {
				res = n.edit(c.Method, res)
			}
			out[i]["result"] = res
		}
	}
	w.Header().Set("Content-Type", "application/json")
	if batch {
		_ = json.NewEncoder(w).Encode(out)
	} else {
		_ = json.NewEncoder(w).Encode(out[0])
	}
}

func fixtureClient(t *testing.T, url string, mode rpc.TraceMode) *rpc.Ethereum {
	t.Helper()
	e, err := rpc.NewEthereum(context.Background(), rpc.EthereumConfig{
		EndpointName: "fixture", URL: url, MaxAttempts: 2, BackoffInitial: 1, BackoffMax: 1,
		Traces: rpc.TraceConfig{Mode: mode},
	}, nil, nil)
	require.NoError(t, err)
	t.Cleanup(e.Close)
	return e
}

// expectedTraces reads a fixture's trace answer with testkit's separate
// reader.
func expectedTraces(t *testing.T, node, tracer string) []chaindata.Trace {
	t.Helper()
	var b struct {
		Number       string
		Hash         string
		Transactions []struct{ Hash string }
	}
	require.NoError(t, json.Unmarshal(loadFixture(t, node+"-block"), &b))
	hashes := make([]string, len(b.Transactions))
	for i, tx := range b.Transactions {
		hashes[i] = tx.Hash
	}
	var number uint64
	for _, c := range strings.TrimPrefix(b.Number, "0x") {
		number = number*16 + uint64(strings.IndexRune("0123456789abcdef", c))
	}
	want, err := testkit.TracesOf(tracer, loadFixture(t, node+"-"+tracer), number, b.Hash, hashes)
	require.NoError(t, err)
	return want
}

func fixtureHeight(n *fixtureNode) uint64 {
	var h uint64
	for _, c := range strings.TrimPrefix(n.height(), "0x") {
		h = h*16 + uint64(strings.IndexRune("0123456789abcdef", c))
	}
	return h
}

func TestTraceFixturesDecodeAsTheNodeAnswered(t *testing.T) {
	for _, tc := range []struct{ node, tracer string }{{"anvil", "debug"}, {"anvil", "parity"}, {"geth", "debug"}} {
		t.Run(tc.node+"-"+tc.tracer, func(t *testing.T) {
			n := newFixtureNode(t, tc.node, tc.tracer)
			e := fixtureClient(t, n.URL, rpc.TraceMode(tc.tracer))
			want := expectedTraces(t, tc.node, tc.tracer)
			h := fixtureHeight(n)

			rs := e.FetchBlocks(context.Background(), []uint64{h})
			require.NoError(t, rs[0].Err)
			assert.True(t, rs[0].Data.Traced)
			assert.Equal(t, want, rs[0].Data.Traces, "the batch's frames")

			one, err := rpc.FetchBlock(context.Background(), e, h)
			require.NoError(t, err)
			assert.Equal(t, want, one.Traces, "one height's frames")
		})
	}
}

// TestCallTreeFramesOnAnvil states what CallTree.run and CallTree.fail
// did, frame by frame, in both tracers' decodings.
func TestCallTreeFramesOnAnvil(t *testing.T) {
	for _, tracer := range []string{"debug", "parity"} {
		t.Run(tracer, func(t *testing.T) {
			n := newFixtureNode(t, "anvil", tracer)
			rs := fixtureClient(t, n.URL, rpc.TraceMode(tracer)).FetchBlocks(context.Background(), []uint64{fixtureHeight(n)})
			require.NoError(t, rs[0].Err)
			fs := rs[0].Data.Traces
			require.Len(t, fs, 10)
			types := make([]chaindata.TraceType, len(fs))
			for i, f := range fs {
				types[i] = f.Type
				want := uint32(i)
				if f.TxIndex == 1 {
					want = uint32(i - 9)
				}
				assert.Equal(t, want, f.Index, "frames depth first, numbered per transaction")
			}
			assert.Equal(t, []chaindata.TraceType{"call", "create", "create2", "call", "delegatecall", "staticcall",
				"staticcall", "call", "selfdestruct", "call"}, types)
			run, boom, destruct, fail := fs[0], fs[6], fs[8], fs[9]
			assert.Equal(t, "4000", run.Value)
			assert.Equal(t, uint32(7), run.Subtraces)
			assert.Equal(t, "1000", fs[1].Value, "CREATE with a quarter of the value")
			assert.Equal(t, fs[1].To, fs[3].To, "the CALL with value goes to the created child")
			assert.Equal(t, []uint32{5}, boom.Address)
			assert.NotEmpty(t, boom.Error)
			assert.Equal(t, "boom", boom.RevertReason)
			assert.True(t, boom.Reverted)
			assert.False(t, fs[7].Reverted)
			assert.Equal(t, []uint32{6, 0}, destruct.Address)
			assert.Equal(t, fs[1].To, destruct.From, "the created child destroys itself")
			assert.Equal(t, "2000", destruct.Value)
			assert.Equal(t, uint32(1), fail.TxIndex)
			assert.Equal(t, "always", fail.RevertReason)
			assert.True(t, fail.Reverted)
			assert.Empty(t, fail.Address)
		})
	}
}

// TestTracersAgree: anvil's two tracers describe the same execution; they
// differ only where the formats do (the top-level frame's gas used, which
// trace_block gives without the intrinsic gas, and the error's words).
func TestTracersAgree(t *testing.T) {
	debug := expectedTraces(t, "anvil", "debug")
	n := newFixtureNode(t, "anvil", "parity")
	rs := fixtureClient(t, n.URL, rpc.TracesParity).FetchBlocks(context.Background(), []uint64{fixtureHeight(n)})
	require.NoError(t, rs[0].Err)
	parity := rs[0].Data.Traces
	require.Len(t, parity, len(debug))
	for i := range debug {
		d, p := debug[i], parity[i]
		if len(d.Address) == 0 {
			d.GasUsed, p.GasUsed = 0, 0
		}
		assert.Equal(t, d.Error != "", p.Error != "", "frame %d failed in one tracer only", i)
		d.Error, p.Error = "", ""
		assert.Equal(t, d, p, "frame %d", i)
	}
}
