package rpc_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"github.com/tideline-dev/tideline/internal/testkit"
	"github.com/tideline-dev/tideline/pkg/rpc"
)

// A trace answer is checked against its block as strictly as the block's
// receipts are: one that does not fit is a *MalformedError naming the
// field, never frames of another block.
func TestTraceAnswersAreChecked(t *testing.T) {
	// edit changes one field of element i of the answer (a transaction's
	// trace, or a trace_block frame); key "" replaces the whole answer's
	// list with its first i elements.
	edit := func(i int, key string, v any) func(string, json.RawMessage) json.RawMessage {
		return func(_ string, r json.RawMessage) json.RawMessage {
			var elems []map[string]any
			_ = json.Unmarshal(r, &elems)
			if key == "" {
				elems = elems[:i]
			} else {
				elems[i][key] = v
			}
			b, _ := json.Marshal(elems)
			return b
		}
	}
	// frameOf changes a field of frame k (depth first) of transaction 0's
	// callTracer frame.
	frameOf := func(k int, key string, v any) func(string, json.RawMessage) json.RawMessage {
		return func(_ string, r json.RawMessage) json.RawMessage {
			var elems []map[string]any
			_ = json.Unmarshal(r, &elems)
			n := 0
			var walk func(f map[string]any)
			walk = func(f map[string]any) {
				if n == k {
					f[key] = v
				}
				n++
				calls, _ := f["calls"].([]any)
				for _, c := range calls {
					walk(c.(map[string]any))
				}
			}
			walk(elems[0]["result"].(map[string]any))
			b, _ := json.Marshal(elems)
			return b
		}
	}
	other := "0x" + strings.Repeat("ab", 32)
	for _, tc := range []struct {
		name, tracer string
		edit         func(string, json.RawMessage) json.RawMessage
		field        string
	}{
		{"another transaction's hash", "debug", edit(0, "txHash", other), "result[0].txHash"},
		{"a transaction missing", "debug", edit(1, "", nil), "result"},
		{"an unknown frame type", "debug", frameOf(4, "type", "JUMP"), "result[0].frames[4].type"},
		{"a value that is not hex", "debug", frameOf(1, "value", "1000"), "result[0].frames[1].value"},
		{"a call without its caller", "debug", frameOf(0, "from", nil), "result[0].frames[0].from"},
		{"another block's hash", "parity", edit(0, "blockHash", other), "result[0].blockHash"},
		{"a transaction position out of the block", "parity", edit(9, "transactionPosition", 7), "result[9].transactionPosition"},
		{"a child without its parent", "parity", edit(8, "traceAddress", []int{7, 0}), "result[8]"},
		{"subtraces that do not add up", "parity", edit(0, "subtraces", 6), "result[0].subtraces"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newFixtureNode(t, "anvil", tc.tracer)
			n.edit = func(method string, r json.RawMessage) json.RawMessage {
				if method == "debug_traceBlockByNumber" || method == "trace_block" {
					return tc.edit(method, r)
				}
				return r
			}
			rs := fixtureClient(t, n.URL, rpc.TraceMode(tc.tracer)).FetchBlocks(context.Background(), []uint64{fixtureHeight(n)})
			var mal *rpc.MalformedError
			require.ErrorAs(t, rs[0].Err, &mal)
			assert.Equal(t, tc.field, mal.Field, "%v", mal)
			assert.Nil(t, rs[0].Data)
		})
	}
}

// TestTraceTheNodeCouldNotMakeIsTransient: geth answers a transaction it
// failed to trace (its own timeout) with an error in place of the frame:
// the height's trace is not had, and asking again may give it.
func TestTraceTheNodeCouldNotMakeIsTransient(t *testing.T) {
	n := newFixtureNode(t, "anvil", "debug")
	n.edit = func(method string, r json.RawMessage) json.RawMessage {
		if method != "debug_traceBlockByNumber" {
			return r
		}
		var txs []map[string]any
		_ = json.Unmarshal(r, &txs)
		txs[1] = map[string]any{"txHash": txs[1]["txHash"], "error": "execution timeout"}
		b, _ := json.Marshal(txs)
		return b
	}
	rs := fixtureClient(t, n.URL, rpc.TracesDebug).FetchBlocks(context.Background(), []uint64{fixtureHeight(n)})
	require.True(t, rpc.IsTransient(rs[0].Err), "%v", rs[0].Err)
	assert.Contains(t, rs[0].Err.Error(), "execution timeout")
	assert.EqualValues(t, 2, n.count("debug_traceBlockByNumber"), "asked again within the budget of 2 attempts")
}

// An endpoint that cannot trace is skipped for traces only: the heights
// come from the endpoint that can, the other still serves heads, and the
// metric and the log say so.
func TestEndpointThatCannotTraceIsSkippedForTraces(t *testing.T) {
	noTrace := newFixtureNode(t, "anvil")
	traces := newFixtureNode(t, "anvil", "debug")
	reg := prometheus.NewRegistry()
	m := rpc.NewMetrics(reg)
	client := func(name, url string) rpc.NamedClient {
		e, err := rpc.NewEthereum(context.Background(), rpc.EthereumConfig{
			ChainID: "c", EndpointName: name, URL: url, MaxAttempts: 2, Traces: rpc.TraceConfig{Mode: rpc.TracesDebug},
		}, zaptest.NewLogger(t), m)
		require.NoError(t, err)
		return rpc.NamedClient{Name: name, Client: e}
	}
	multi, err := rpc.NewMulti("c", []rpc.NamedClient{client("plain", noTrace.URL), client("tracing", traces.URL)}, rpc.MultiOptions{}, zaptest.NewLogger(t), m)
	require.NoError(t, err)
	defer multi.Close()
	h := fixtureHeight(traces)
	want := expectedTraces(t, "anvil", "debug")

	for round := 0; round < 2; round++ {
		rs := multi.FetchBlocks(context.Background(), []uint64{h})
		require.NoError(t, rs[0].Err)
		assert.Equal(t, want, rs[0].Data.Traces)
	}
	assert.EqualValues(t, 1, noTrace.count("debug_traceBlockByNumber"), "asked once; skipped once it said it cannot")
	assert.Equal(t, 0.0, testkit.Sum(t, reg, "rpc_endpoint_traces", map[string]string{"chain_id": "c", "endpoint": "plain"}))
	assert.Equal(t, 1.0, testkit.Sum(t, reg, "rpc_endpoint_traces", map[string]string{"chain_id": "c", "endpoint": "tracing"}))

	one, err := rpc.FetchBlock(context.Background(), multi, h)
	require.NoError(t, err)
	assert.Equal(t, want, one.Traces, "one height's trace from the endpoint that can")
	head, err := multi.HeadHeight(context.Background())
	require.NoError(t, err)
	assert.Equal(t, h, head)
	assert.Positive(t, noTrace.count("eth_blockNumber"), "still asked for heads")

	// With no endpoint able to trace, a height fails and says why.
	alone, err := rpc.NewMulti("c", []rpc.NamedClient{client("plain2", noTrace.URL)}, rpc.MultiOptions{}, nil, nil)
	require.NoError(t, err)
	defer alone.Close()
	rs := alone.FetchBlocks(context.Background(), []uint64{h})
	var unsupported *rpc.TracesUnsupportedError
	require.True(t, errors.As(rs[0].Err, &unsupported), "%v", rs[0].Err)
	assert.Equal(t, "plain2", unsupported.Endpoint)
}

func TestChooseTraces(t *testing.T) {
	both := rpc.TraceSupport{Endpoint: "a", Debug: true, Parity: true}
	debugOnly := rpc.TraceSupport{Endpoint: "b", Debug: true}
	parityOnly := rpc.TraceSupport{Endpoint: "c", Parity: true}
	none := rpc.TraceSupport{Endpoint: "d"}
	down := rpc.TraceSupport{Endpoint: "e", Err: errors.New("refused")}
	for _, tc := range []struct {
		setting string
		probes  []rpc.TraceSupport
		want    rpc.TraceMode
		err     bool
	}{
		{"off", []rpc.TraceSupport{both}, rpc.TracesOff, false},
		{"auto", []rpc.TraceSupport{both, debugOnly, none}, rpc.TracesDebug, false},
		{"auto", []rpc.TraceSupport{both, parityOnly}, rpc.TracesParity, false},
		{"auto", []rpc.TraceSupport{debugOnly, parityOnly}, rpc.TracesOff, true},
		{"auto", []rpc.TraceSupport{none, down}, rpc.TracesOff, false},
		{"auto", []rpc.TraceSupport{down}, rpc.TracesOff, true},
		{"debug", []rpc.TraceSupport{parityOnly, debugOnly}, rpc.TracesDebug, false},
		{"debug", []rpc.TraceSupport{parityOnly, none}, rpc.TracesOff, true},
		{"parity", []rpc.TraceSupport{down}, rpc.TracesParity, false},
		{"sometimes", nil, rpc.TracesOff, true},
	} {
		got, err := rpc.ChooseTraces(tc.setting, tc.probes)
		var choice *rpc.TraceChoiceError
		assert.Equal(t, tc.err, errors.As(err, &choice), "%s %v: %v", tc.setting, tc.probes, err)
		assert.Equal(t, tc.want, got, "%s %v", tc.setting, tc.probes)
	}
}

func TestResolveTracesProbesTheEndpoints(t *testing.T) {
	debugNode := newFixtureNode(t, "anvil", "debug")
	bothNode := newFixtureNode(t, "anvil", "debug", "parity")
	plain := newFixtureNode(t, "anvil")
	mk := func(urls ...string) *rpc.Multi {
		var eps []rpc.NamedClient
		for i, u := range urls {
			e, err := rpc.NewEthereum(context.Background(), rpc.EthereumConfig{EndpointName: string(rune('a' + i)), URL: u, MaxAttempts: 1}, nil, nil)
			require.NoError(t, err)
			eps = append(eps, rpc.NamedClient{Name: string(rune('a' + i)), Client: e})
		}
		m, err := rpc.NewMulti("c", eps, rpc.MultiOptions{}, nil, nil)
		require.NoError(t, err)
		t.Cleanup(m.Close)
		return m
	}
	m := mk(plain.URL, bothNode.URL, debugNode.URL)
	mode, err := rpc.ResolveTraces(context.Background(), m, "auto", zaptest.NewLogger(t))
	require.NoError(t, err)
	assert.Equal(t, rpc.TracesDebug, mode)
	assert.Equal(t, rpc.TracesDebug, m.TraceMode())
	rs := m.FetchBlocks(context.Background(), []uint64{fixtureHeight(plain)})
	require.NoError(t, rs[0].Err)
	assert.True(t, rs[0].Data.Traced)
	assert.Zero(t, plain.count("debug_traceBlockByNumber")-1, "the plain endpoint was probed once and never asked for a trace")

	_, err = rpc.ResolveTraces(context.Background(), mk(plain.URL), "parity", nil)
	var choice *rpc.TraceChoiceError
	require.ErrorAs(t, err, &choice)
}
