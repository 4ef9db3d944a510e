package rpc_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/internal/testkit"
	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/rpc"
	"github.com/tideline-dev/tideline/pkg/simchain"
)

// The simulated chain's traces, fetched in batches with the blocks, are
// the frames its answers hold, for both tracers.
func TestFetchBlocksWithTracesFromTheSimulatedChain(t *testing.T) {
	cfg := simchain.DefaultConfig()
	cfg.Length = 200
	sim, err := simchain.Start(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = sim.Close() })
	heights := []uint64{0, 1, 2, 3, 57, 199}
	for _, mode := range []rpc.TraceMode{rpc.TracesDebug, rpc.TracesParity} {
		e, err := rpc.NewEthereum(context.Background(), rpc.EthereumConfig{
			EndpointName: "sim", URL: sim.HTTPURL(), Traces: rpc.TraceConfig{Mode: mode, Batch: 4},
		}, nil, nil)
		require.NoError(t, err)
		defer e.Close()
		for i, r := range e.FetchBlocks(context.Background(), heights) {
			require.NoError(t, r.Err)
			require.Equal(t, heights[i], r.Height)
			require.True(t, r.Data.Traced)
			hashes := make([]string, len(r.Data.Transactions))
			for k, tx := range r.Data.Transactions {
				hashes[k] = tx.Hash
			}
			method, params := "debug_traceBlockByNumber", []any{"0x" + strconv.FormatUint(r.Height, 16), map[string]any{"tracer": "callTracer"}}
			if mode == rpc.TracesParity {
				method, params = "trace_block", []any{"0x" + strconv.FormatUint(r.Height, 16)}
			}
			want, err := testkit.TracesOf(string(mode), callRaw(t, sim.HTTPURL(), method, params...), r.Height, r.Data.Block.Hash, hashes)
			require.NoError(t, err)
			assert.Equal(t, want, r.Data.Traces, "%s height %d", mode, r.Height)
		}
	}
}

// callRaw asks url one JSON-RPC call and returns its result as sent.
func callRaw(t *testing.T, url, method string, params ...any) json.RawMessage {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	var answer struct {
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&answer))
	require.Empty(t, answer.Error)
	return answer.Result
}

// holdingProxy forwards to url, except that it holds every request that
// asks the trace of one height until the client gives up.
func holdingProxy(t *testing.T, url string, height uint64) *httptest.Server {
	marker := []byte(`"0x` + strconv.FormatUint(height, 16) + `",{"timeout"`)
	p := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, marker) {
			<-r.Context().Done()
			return
		}
		resp, err := http.Post(url, "application/json", bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	t.Cleanup(p.Close)
	return p
}

// One slow trace does not hold the others: the request that carries it is
// split until it is alone, and only its height fails, transiently, after
// its budget.
func TestASlowTraceIsIsolated(t *testing.T) {
	cfg := simchain.DefaultConfig()
	cfg.Length = 100
	sim, err := simchain.Start(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = sim.Close() })
	const slow = 13
	proxy := holdingProxy(t, sim.HTTPURL(), slow)
	e, err := rpc.NewEthereum(context.Background(), rpc.EthereumConfig{
		EndpointName: "proxy", URL: proxy.URL, MaxAttempts: 5, BackoffInitial: time.Millisecond, BackoffMax: time.Millisecond,
		Traces: rpc.TraceConfig{Mode: rpc.TracesDebug, Batch: 8, Timeout: 300 * time.Millisecond},
	}, nil, nil)
	require.NoError(t, err)
	defer e.Close()
	heights := make([]uint64, 16)
	for i := range heights {
		heights[i] = uint64(10 + i)
	}
	began := time.Now()
	rs := e.FetchBlocks(context.Background(), heights)
	took := time.Since(began)
	for _, r := range rs {
		if r.Height == slow {
			assert.True(t, rpc.IsTransient(r.Err), "%v", r.Err)
			assert.Contains(t, r.Err.Error(), "no answer within 300ms")
			continue
		}
		require.NoError(t, r.Err, "height %d", r.Height)
		assert.True(t, r.Data.Traced)
	}
	// Splitting 8 heights down to one takes 3 timeouts, then 2 attempts
	// of the slow height alone: about 5 × 300 ms, far below 8 × 5 × 300 ms.
	assert.Less(t, took, 4*time.Second)
}

// The backfill's fetch: traces only, for blocks read before (from the
// database, in the indexer), checked against them; one slow height fails
// alone, and a block the node no longer has is refused.
func TestFetchTracesOfKnownBlocks(t *testing.T) {
	cfg := simchain.DefaultConfig()
	cfg.Length = 100
	sim, err := simchain.Start(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = sim.Close() })
	plain, err := rpc.NewEthereum(context.Background(), rpc.EthereumConfig{EndpointName: "sim", URL: sim.HTTPURL()}, nil, nil)
	require.NoError(t, err)
	defer plain.Close()
	traced, err := rpc.NewEthereum(context.Background(), rpc.EthereumConfig{
		EndpointName: "sim", URL: sim.HTTPURL(), Traces: rpc.TraceConfig{Mode: rpc.TracesParity, Batch: 3},
	}, nil, nil)
	require.NoError(t, err)
	defer traced.Close()
	heights := []uint64{20, 21, 22, 23, 24, 25, 26}
	want := traced.FetchBlocks(context.Background(), heights)
	known := plain.FetchBlocks(context.Background(), heights)
	blocks := make([]*chaindata.BlockData, len(known))
	for i, r := range known {
		require.NoError(t, r.Err)
		require.False(t, r.Data.Traced)
		blocks[i] = r.Data
	}
	multi, err := rpc.NewMulti("c", []rpc.NamedClient{{Name: "sim", Client: traced}}, rpc.MultiOptions{}, nil, nil)
	require.NoError(t, err)
	for i, err := range rpc.FetchTraces(context.Background(), multi, blocks) {
		require.NoError(t, err)
		assert.Equal(t, want[i].Data.Traces, blocks[i].Traces)
	}

	blocks[2].Transactions[0].Hash = blocks[3].Transactions[0].Hash // not the node's block any more
	errs := traced.FetchTraces(context.Background(), blocks)
	var mal *rpc.MalformedError
	require.ErrorAs(t, errs[2], &mal)
	for i, err := range errs {
		if i != 2 {
			assert.NoError(t, err)
		}
	}
}
