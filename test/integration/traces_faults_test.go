package integration

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/internal/testkit"
	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/indexer/activity"
	"github.com/tideline-dev/tideline/pkg/loadgen"
	"github.com/tideline-dev/tideline/pkg/loadgen/contracts"
	"github.com/tideline-dev/tideline/pkg/localstack"
	"github.com/tideline-dev/tideline/pkg/simchain"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// Traces under trouble: a reorganisation replacing traced blocks, an
// endpoint that cannot trace beside one that can, a trace the node does
// not answer for one height, and the backfill of a chain indexed without
// traces.

// A reorganisation replaces traced blocks: the old frames are tombstoned,
// the new ones stored, and the address look-ups follow.
func TestReorgReplacesTracedBlocks(t *testing.T) {
	t.Parallel() // see README.md, "Serial and parallel tests"
	const chainID = "it-traces-reorg"
	node, err := localstack.StartAnvil(filepath.Join(stack.dir, chainID), localstack.AnvilOptions{})
	require.NoError(t, err)
	t.Cleanup(node.Stop)
	rc := nodeClient(t, node.HTTPURL)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	g, err := loadgen.New(ctx, node.HTTPURL, zap.NewNop(), loadgen.Config{PrivateKey: localstack.AnvilDefaultKey})
	require.NoError(t, err)
	defer g.Close()
	store := contracts.MustLoad(contracts.Store)
	storeAt, err := g.DeployContract(ctx, store, nil)
	require.NoError(t, err)
	tree := contracts.MustLoad(contracts.CallTree)
	at, err := g.DeployContract(ctx, tree, nil, storeAt)
	require.NoError(t, err)
	for i := range 6 {
		h, err := g.Transact(ctx, at, tree, "run", big.NewInt(400), big.NewInt(int64(10+i)))
		require.NoError(t, err)
		_, err = g.WaitReceipts(ctx, nil)
		require.NoError(t, err)
		_ = h
	}

	cfg := chainConfig(chainID, node.HTTPURL)
	ch := cfg.Chains[chainID]
	ch.ConfirmationDepth = 64
	ch.Traces.Mode = config.TracesDebug
	cfg.Chains[chainID] = ch
	st := openStore(t)
	conn := rawConn(t)
	runWorker(t, cfg)
	deleteChainSchedulesAtEnd(t, chainID)
	head := nodeHead(t, node.HTTPURL)
	waitIndexed(t, st, chainID, head, time.Minute)
	before, oldHead := storedTraces(t, conn, chainID), head
	require.Len(t, before[oldHead], 9, "the last run's frames")

	// The newest three blocks are replaced by a branch whose second block
	// holds one run with another salt (other created addresses).
	data, err := tree.Calldata("run", big.NewInt(99))
	require.NoError(t, err)
	call := map[string]any{"from": g.From(), "to": at, "gas": hexutil.Uint64(1_500_000), "value": hexutil.Big(*big.NewInt(800)),
		"data": hexutil.Bytes(data)}
	nodeCall(t, rc, nil, "anvil_reorg", 3, []any{[]any{call, 1}})
	nodeCall(t, rc, nil, "evm_mine")
	head = nodeHead(t, node.HTTPURL)
	waitFor(t, time.Minute, "the reorganisation repaired, traces included", func() (bool, string) {
		if diff := reorgDiff(t, conn, rc, chainID, head); diff != "" {
			return false, diff
		}
		got, want := storedTraces(t, conn, chainID), nodeTraces(t, node.HTTPURL, config.TracesDebug, 0, head)
		if len(got) != len(want) {
			return false, fmt.Sprintf("%d heights with frames stored, %d on the node", len(got), len(want))
		}
		for h, fs := range want {
			if fmt.Sprint(fs) != fmt.Sprint(got[h]) {
				return false, fmt.Sprintf("height %d differs", h)
			}
		}
		return true, ""
	})
	var tombstones uint64
	require.NoError(t, conn.QueryRow(context.Background(),
		"SELECT count() FROM traces FINAL WHERE chain_id = ? AND is_canonical = 0", chainID).Scan(&tombstones))
	require.Equal(t, uint64(9+9), tombstones, "the frames of the orphaned runs of the first and third replaced blocks (the replacing run's frames take the second's positions)")
	// The orphaned runs' created contracts are no longer found.
	orphanChild := before[oldHead][1].To
	var listed uint64
	require.NoError(t, conn.QueryRow(context.Background(),
		"SELECT count() FROM address_traces FINAL WHERE chain_id = ? AND address = ? AND is_canonical = 1", chainID, orphanChild).Scan(&listed))
	require.Zero(t, listed)
}

// An endpoint without tracing (first in preference) beside one with it:
// auto chooses the callTracer, every height of a catch-up comes with its
// traces from the endpoint that has them, and the other still serves
// heads, and shows as unable to trace.
func TestEndpointWithoutTracingBesideOneWithIt(t *testing.T) {
	t.Parallel() // see README.md, "Serial and parallel tests"
	const chainID = "it-traces-mixed"
	cfg := simchain.DefaultConfig()
	cfg.Length = 250
	cfg.TxsPerBlock = 5
	cfg.BlockTime = time.Hour // no new head while the test runs
	plainCfg := cfg
	plainCfg.NoDebugTracer, plainCfg.NoParityTracer = true, true
	plain, err := simchain.Start(context.Background(), plainCfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = plain.Close() })
	tracing, err := simchain.Start(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tracing.Close() })

	c := tracesConfig(chainID, plain.HTTPURL())
	ch := c.Chains[chainID]
	ch.Endpoints = map[string]string{"a-plain": plain.HTTPURL(), "b-tracing": tracing.HTTPURL()}
	ch.Traces.Mode = config.TracesAuto
	c.Chains[chainID] = ch
	port, err := localstack.FreePort()
	require.NoError(t, err)
	c.Metrics.Listen = fmt.Sprintf("127.0.0.1:%d", port)
	st := openStore(t)
	runWorker(t, c)
	deleteChainSchedulesAtEnd(t, chainID)
	head := plain.Head()
	waitIndexed(t, st, chainID, head, 2*time.Minute)
	untraced, err := st.Traces().UntracedHeights(context.Background(), chainID, 0, head, 10)
	require.NoError(t, err)
	require.Empty(t, untraced, "every height indexed with its traces")
	stored := storedTraces(t, rawConn(t), chainID)
	for _, h := range []uint64{0, 1, 150, head} {
		want := nodeTraces(t, tracing.HTTPURL(), config.TracesDebug, h, h)
		require.Equal(t, want[h], stored[h], "height %d", h)
	}
	g := testkit.Scrape(t, c.Metrics.Listen)
	require.Equal(t, 0.0, testkit.Sum(t, g, "rpc_endpoint_traces", map[string]string{"chain_id": chainID, "endpoint": "a-plain"}))
	require.Equal(t, 1.0, testkit.Sum(t, g, "rpc_endpoint_traces", map[string]string{"chain_id": chainID, "endpoint": "b-tracing"}))
	require.Positive(t, testkit.Sum(t, g, "rpc_requests_total", map[string]string{"chain_id": chainID, "endpoint": "a-plain", "method": "eth_blockNumber"}),
		"the endpoint without tracing still serves heads")
	require.Zero(t, testkit.Sum(t, g, "rpc_requests_total", map[string]string{"chain_id": chainID, "endpoint": "a-plain",
		"method": "eth_getBlockByNumber+eth_getBlockReceipts+debug_traceBlockByNumber"}), "and is never asked for a trace")
}

// tracesConfig is rangeConfig with a backlog of any size caught up by the
// scheduler in ranges of 100.
func tracesConfig(chainID, url string) *config.Config {
	c := rangeConfig(chainID, url, 100)
	ch := c.Chains[chainID]
	ch.HeadScan.CatchupThreshold = 50
	c.Chains[chainID] = ch
	return c
}

// holdingTraces forwards to a node (rewritingProxy, unchanged answers)
// but holds every request asking the trace of one height until released,
// as a node that cannot trace it in time does.
type holdingTraces struct {
	rewritingProxy
	marker   []byte
	released atomic.Bool
	held     atomic.Int64
}

func (p *holdingTraces) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if !p.released.Load() && bytes.Contains(body, p.marker) {
		p.held.Add(1)
		<-r.Context().Done() // the client gives up first
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	p.rewritingProxy.ServeHTTP(w, r)
}

// A trace that does not come for one height: the rest of its range
// lands, the height is handed to its own IndexBlock workflow, and lands
// once the node answers.
func TestASlowTraceDoesNotHoldTheRange(t *testing.T) {
	t.Parallel() // see README.md, "Serial and parallel tests"
	const chainID = "it-traces-slow"
	const slow = 123
	cfg := simchain.DefaultConfig()
	cfg.Length = 250
	cfg.TxsPerBlock = 3
	cfg.BlockTime = time.Hour
	sim, err := simchain.Start(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = sim.Close() })
	proxy := &holdingTraces{rewritingProxy: rewritingProxy{target: sim.HTTPURL()}, marker: []byte(`"` + hexutil.EncodeUint64(slow) + `",{"timeout"`)}
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)

	c := tracesConfig(chainID, srv.URL)
	ch := c.Chains[chainID]
	ch.Traces.Mode = config.TracesDebug
	ch.Traces.Timeout = time.Second
	ch.RPC.BackoffInitial, ch.RPC.BackoffMax = 10*time.Millisecond, 50*time.Millisecond
	ch.Retry.Range.InitialInterval = 100 * time.Millisecond
	ch.Retry.Range.MaximumInterval = time.Second
	ch.Retry.Index.InitialInterval = 100 * time.Millisecond
	ch.Retry.Index.MaximumInterval = time.Second
	c.Chains[chainID] = ch
	st := openStore(t)
	runWorker(t, c)
	deleteChainSchedulesAtEnd(t, chainID)
	head := sim.Head()
	waitFor(t, 3*time.Minute, "every height but the slow one indexed", func() (bool, string) {
		n, err := st.CountIndexed(context.Background(), chainID, []chaindata.HeightRange{{From: 0, To: head}})
		if err != nil {
			return false, err.Error()
		}
		return n[0] == head, fmt.Sprintf("indexed=%d of %d", n[0], head+1)
	})
	missing, err := st.MissingHeights(context.Background(), chainID, 0, head, 5)
	require.NoError(t, err)
	require.Equal(t, []uint64{slow}, missing)
	require.Positive(t, proxy.held.Load())
	// Its range gave it to its own IndexBlock workflow, which fails,
	// typed, while the node does not answer.
	tc := temporalClient(t)
	id := temporal.IndexBlockID(chainID, slow)
	waitFor(t, time.Minute, "the slow height's own workflow retries", func() (bool, string) {
		d, err := tc.DescribeWorkflowExecution(context.Background(), id, "")
		if err != nil {
			return false, err.Error()
		}
		for _, pa := range d.GetPendingActivities() {
			if pa.GetAttempt() >= 2 && pa.GetLastFailure().GetApplicationFailureInfo().GetType() == activity.ErrTypeRPC {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d pending activities", len(d.GetPendingActivities()))
	})

	proxy.released.Store(true)
	waitIndexed(t, st, chainID, head, 2*time.Minute)
	want := nodeTraces(t, sim.HTTPURL(), config.TracesDebug, slow-1, slow+1)
	got := storedTraces(t, rawConn(t), chainID)
	for h := uint64(slow - 1); h <= slow+1; h++ {
		require.Equal(t, want[h], got[h], "height %d", h)
	}
}

// A chain indexed without traces, then with: the backfill fills every
// indexed height's traces, newest first, without writing its blocks
// again, and indexer status shows it.
func TestTracesBackfillOnAnIndexedChain(t *testing.T) {
	t.Parallel() // see README.md, "Serial and parallel tests"
	const chainID = "it-traces-backfill"
	cfg := simchain.DefaultConfig()
	cfg.Length = 250
	cfg.TxsPerBlock = 4
	cfg.BlockTime = time.Hour
	sim, err := simchain.Start(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = sim.Close() })
	c := tracesConfig(chainID, sim.HTTPURL())
	st := openStore(t)
	stop := startWorker(t, c)
	deleteChainSchedulesAtEnd(t, chainID)
	head := sim.Head()
	waitIndexed(t, st, chainID, head, 2*time.Minute)
	stop()
	untraced, err := st.Traces().UntracedHeights(context.Background(), chainID, 0, head, 1000)
	require.NoError(t, err)
	require.Len(t, untraced, int(head+1))
	blocksVersion := testkit.NewestVersion(t, stack.ch.Addr, database, "blocks", chainID, head)

	ch := c.Chains[chainID]
	ch.Traces.Mode = config.TracesParity
	ch.Traces.Backfill.Interval = time.Second
	ch.Traces.Backfill.Batch = 50
	ch.Traces.Backfill.HeightsPerSecond = 1000
	c.Chains[chainID] = ch
	runWorker(t, c)
	waitFor(t, 2*time.Minute, "every indexed height traced by the backfill", func() (bool, string) {
		hs, err := st.Traces().UntracedHeights(context.Background(), chainID, 0, 1<<40, 1000)
		if err != nil {
			return false, err.Error()
		}
		return len(hs) == 0, strconv.Itoa(len(hs)) + " heights untraced"
	})
	require.Equal(t, blocksVersion, testkit.NewestVersion(t, stack.ch.Addr, database, "blocks", chainID, head), "no block written again")
	stored := storedTraces(t, rawConn(t), chainID)
	for _, h := range []uint64{0, 100, head} {
		want := nodeTraces(t, sim.HTTPURL(), config.TracesParity, h, h)
		require.Equal(t, want[h], stored[h], "height %d", h)
	}
	waitFor(t, time.Minute, "the backfill's pass recorded done", func() (bool, string) {
		b, err := st.Traces().TraceBackfillState(context.Background(), chainID)
		require.NoError(t, err)
		return !b.Running() && b.Done > head, fmt.Sprintf("%+v", b)
	})
}
