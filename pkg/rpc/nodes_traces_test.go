package rpc_test

import (
	"context"
	"encoding/json"
	"math/big"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"github.com/tideline-dev/tideline/internal/testkit"
	"github.com/tideline-dev/tideline/pkg/loadgen"
	"github.com/tideline-dev/tideline/pkg/loadgen/contracts"
	"github.com/tideline-dev/tideline/pkg/localstack"
	"github.com/tideline-dev/tideline/pkg/rpc"
)

// The tracers of real nodes: anvil (both) and geth --dev (the callTracer;
// it has no trace_block). CallTree.run and CallTree.fail are sent into one
// block; the frames the client reads must be the node's answer, frame by
// frame.

// callTreeBlock deploys Store and CallTree on the node, sends run (with
// value) and fail back to back, and returns the height holding them.
func callTreeBlock(t *testing.T, ctx context.Context, url, key string) uint64 {
	t.Helper()
	g, err := loadgen.New(ctx, url, zaptest.NewLogger(t), loadgen.Config{PrivateKey: key})
	require.NoError(t, err)
	defer g.Close()
	store, err := g.DeployContract(ctx, contracts.MustLoad(contracts.Store), nil)
	require.NoError(t, err)
	tree := contracts.MustLoad(contracts.CallTree)
	at, err := g.DeployContract(ctx, tree, nil, store)
	require.NoError(t, err)
	run, err := g.Transact(ctx, at, tree, "run", big.NewInt(4000), big.NewInt(7))
	require.NoError(t, err)
	fail, err := g.Transact(ctx, at, tree, "fail", nil)
	require.NoError(t, err)
	rs, err := g.WaitReceipts(ctx, []common.Hash{run, fail})
	require.NoError(t, err)
	require.Equal(t, rs[0].BlockNumber, rs[1].BlockNumber, "run and fail share a block (the node's block time is longer than the two sends)")
	return rs[0].BlockNumber.Uint64()
}

// checkNodeTraces fetches height with tracer mode and compares every frame
// with the node's own answer, read by testkit.
func checkNodeTraces(t *testing.T, ctx context.Context, url string, mode rpc.TraceMode, height uint64) {
	t.Helper()
	e, err := rpc.NewEthereum(ctx, rpc.EthereumConfig{EndpointName: "node", URL: url, Traces: rpc.TraceConfig{Mode: mode}}, nil, nil)
	require.NoError(t, err)
	defer e.Close()
	rs := e.FetchBlocks(ctx, []uint64{height - 1, height})
	for _, r := range rs {
		require.NoError(t, r.Err)
		require.True(t, r.Data.Traced)
	}
	data := rs[1].Data
	require.Len(t, data.Transactions, 2)
	hashes := []string{data.Transactions[0].Hash, data.Transactions[1].Hash}
	q := "0x" + strconv.FormatUint(height, 16)
	raw := callRaw(t, url, "debug_traceBlockByNumber", q, map[string]any{"tracer": "callTracer"})
	if mode == rpc.TracesParity {
		raw = callRaw(t, url, "trace_block", q)
	}
	want, err := testkit.TracesOf(string(mode), raw, height, data.Block.Hash, hashes)
	require.NoError(t, err)
	require.Len(t, data.Traces, 10, "run: the call and its 8 inner frames; fail: one")
	assert.Equal(t, want, data.Traces)
	assert.Equal(t, "boom", data.Traces[6].RevertReason)
	assert.Equal(t, "always", data.Traces[9].RevertReason)

	one, err := rpc.FetchBlock(ctx, e, height)
	require.NoError(t, err)
	assert.Equal(t, want, one.Traces)
}

func TestTracesOnAnvil(t *testing.T) {
	node, err := localstack.StartAnvil(t.TempDir(), localstack.AnvilOptions{BlockTime: time.Second})
	require.NoError(t, err)
	t.Cleanup(node.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	h := callTreeBlock(t, ctx, node.HTTPURL, localstack.AnvilDefaultKey)
	for _, mode := range []rpc.TraceMode{rpc.TracesDebug, rpc.TracesParity} {
		t.Run(string(mode), func(t *testing.T) { checkNodeTraces(t, ctx, node.HTTPURL, mode, h) })
	}
}

func TestTracesOnGethDev(t *testing.T) {
	node, err := localstack.StartGethDev(t.TempDir(), localstack.GethOptions{Period: time.Second})
	require.NoError(t, err)
	t.Cleanup(node.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	h := callTreeBlock(t, ctx, node.HTTPURL, "")
	checkNodeTraces(t, ctx, node.HTTPURL, rpc.TracesDebug, h)

	// geth has no trace_block: auto finds the callTracer only.
	e, err := rpc.NewEthereum(ctx, rpc.EthereumConfig{EndpointName: "geth", URL: node.HTTPURL}, nil, nil)
	require.NoError(t, err)
	defer e.Close()
	assert.Equal(t, rpc.TraceSupport{Endpoint: "geth", Debug: true}, e.ProbeTraces(ctx))
	e.SetTraceMode(rpc.TracesParity)
	rs := e.FetchBlocks(ctx, []uint64{h})
	var unsupported *rpc.TracesUnsupportedError
	require.ErrorAs(t, rs[0].Err, &unsupported)
	assert.False(t, e.CanTrace())
}

// TestRecordTraceFixtures records testdata/traces again from anvil and
// geth --dev when TIDELINE_RECORD_TRACES is set:
//
//	TIDELINE_RECORD_TRACES=1 go test ./pkg/rpc -run TestRecordTraceFixtures
func TestRecordTraceFixtures(t *testing.T) {
	if os.Getenv("TIDELINE_RECORD_TRACES") == "" {
		t.Skip("set TIDELINE_RECORD_TRACES=1 to record the trace fixtures again")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	record := func(node, url, key string, tracers ...string) {
		h := callTreeBlock(t, ctx, url, key)
		q := "0x" + strconv.FormatUint(h, 16)
		save := func(name, method string, params ...any) {
			b, err := json.MarshalIndent(map[string]any{"jsonrpc": "2.0", "id": 1, "result": callRaw(t, url, method, params...)}, "", " ")
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join("testdata", "traces", node+"-"+name+".json"), append(b, '\n'), 0o644))
		}
		save("block", "eth_getBlockByNumber", q, true)
		save("receipts", "eth_getBlockReceipts", q)
		for _, tr := range tracers {
			if tr == "debug" {
				save("debug", "debug_traceBlockByNumber", q, map[string]any{"tracer": "callTracer"})
			} else {
				save("parity", "trace_block", q)
			}
		}
	}
	anvil, err := localstack.StartAnvil(t.TempDir(), localstack.AnvilOptions{BlockTime: time.Second})
	require.NoError(t, err)
	defer anvil.Stop()
	record("anvil", anvil.HTTPURL, localstack.AnvilDefaultKey, "debug", "parity")
	geth, err := localstack.StartGethDev(t.TempDir(), localstack.GethOptions{Period: time.Second})
	require.NoError(t, err)
	defer geth.Stop()
	record("geth", geth.HTTPURL, "", "debug")
}
