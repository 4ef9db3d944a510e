package integration

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/converter"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/localstack"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// phantomProxy answers, once armed, the next eth_blockNumber (alone or in
// a batch) with a head `jump` too high, as a load balancer does that sends
// one request to a broken replica.
type phantomProxy struct {
	rewritingProxy
	jump  uint64
	armed atomic.Bool
	lied  atomic.Int32
}

func newPhantomProxy(target string, jump uint64) *phantomProxy {
	p := &phantomProxy{jump: jump}
	p.rewritingProxy = rewritingProxy{target: target, rewrite: p.lie}
	return p
}

func (p *phantomProxy) lie(call rpcMessage, answer *rpcMessage) bool {
	var h hexutil.Uint64
	if call.Method != "eth_blockNumber" || json.Unmarshal(answer.Result, &h) != nil || !p.armed.CompareAndSwap(true, false) {
		return false
	}
	answer.Result, _ = json.Marshal(hexutil.Uint64(uint64(h) + p.jump))
	p.lied.Add(1)
	return true
}

// One answer with a head 10,000,000 too high (then honest ones) must not
// wedge the chain: the head is not confirmed (the node has no block
// there), so no scheduler takes a phantom range, no workflow is started for
// a height that does not exist, and the live heights keep being indexed
// within a few block times. (On main before this, the watermark stood
// still for good: issue 9.)
func TestPhantomHeadDoesNotWedgeTheChain(t *testing.T) {
	t.Parallel() // see README.md, "Serial and parallel tests"
	const chainID = "it-phantom"
	node, err := localstack.StartAnvil(filepath.Join(stack.dir, chainID), localstack.AnvilOptions{BlockTime: time.Second})
	require.NoError(t, err)
	t.Cleanup(node.Stop)
	proxy := newPhantomProxy(node.HTTPURL, 10_000_000)
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	runWorker(t, chainConfig(chainID, srv.URL))
	store := openStore(t)
	waitIndexed(t, store, chainID, nodeHead(t, node.HTTPURL), time.Minute)

	proxy.armed.Store(true)
	waitFor(t, 30*time.Second, "the phantom head answered", func() (bool, string) {
		return proxy.lied.Load() > 0, "not yet"
	})
	at := nodeHead(t, node.HTTPURL)
	// Live heights go on: ten more blocks, each indexed within a few block times.
	waitIndexed(t, store, chainID, at+10, 30*time.Second)

	_, err = temporalClient(t).DescribeWorkflowExecution(context.Background(), temporal.SchedulerID(chainID), "")
	var notFound *serviceerror.NotFound
	require.ErrorAs(t, err, &notFound, "no scheduler was started for the phantom range")
	requireNoIndexingAbove(t, chainID, nodeHead(t, node.HTTPURL)+1)
	requireSameChain(t, rawConn(t), nodeClient(t, node.HTTPURL), chainID, 0, at+10)
}

// A scheduler given a range 10,000,000 heights above the real chain (from
// a head taken before heads were confirmed, or a chain cut back since;
// issue 9) drops the phantom part by itself: the live heights are indexed
// again within a few block times, it schedules only heights that exist,
// no workflow runs for a height that does not, and an IndexBlock started
// for a phantom height ends unindexed (NotProduced) instead of retrying.
func TestPhantomSchedulerShrinksToTheChain(t *testing.T) {
	t.Parallel() // see README.md, "Serial and parallel tests"
	const chainID = "it-shrink"
	node, err := localstack.StartAnvil(filepath.Join(stack.dir, chainID), localstack.AnvilOptions{BlockTime: time.Second})
	require.NoError(t, err)
	t.Cleanup(node.Stop)
	cfg := chainConfig(chainID, node.HTTPURL)
	ch := cfg.Chains[chainID]
	ch.Scheduler.BatchSize, ch.Scheduler.MaxInFlight = 10, 20
	cfg.Chains[chainID] = ch
	runWorker(t, cfg)
	store := openStore(t)
	head := nodeHead(t, node.HTTPURL)
	waitIndexed(t, store, chainID, head, time.Minute)

	ctx := context.Background()
	tc := temporalClient(t)
	opts := temporal.NewOptions(chainID, ch.Index.ActivityTimeout)
	phantom := head + 10_000_000
	sched, err := tc.ExecuteWorkflow(ctx, opts.SchedulerStart(chaindata.HeightRange{From: head + 1, To: phantom}, string(types.IndexModeScheduler)), temporal.SchedulerWorkflow,
		types.SchedulerInput{ChainID: chainID, Head: phantom, Remaining: []chaindata.HeightRange{{From: head + 1, To: phantom}}})
	require.NoError(t, err)
	block, err := tc.ExecuteWorkflow(ctx, opts.IndexBlockStart(phantom, types.UltraHigh.PriorityKey(), string(types.IndexModeDirect)), temporal.IndexBlockWorkflow,
		types.IndexBlockInput{ChainID: chainID, Height: phantom})
	require.NoError(t, err)

	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var res types.IndexBlockResult
	require.NoError(t, block.Get(wctx, &res))
	require.True(t, res.NotProduced, "the phantom height ended unindexed")
	var done types.SchedulerResult
	require.NoError(t, sched.Get(wctx, &done), "the scheduler finished")
	require.Less(t, done.Scheduled, uint64(1000), "it scheduled only heights that exist")
	// Its memo, where HeadScan reads what it owns, shrank with it.
	desc, err := tc.DescribeWorkflowExecution(ctx, sched.GetID(), sched.GetRunID())
	require.NoError(t, err)
	var owned chaindata.HeightRange
	require.NoError(t, converter.GetDefaultDataConverter().FromPayload(
		desc.GetWorkflowExecutionInfo().GetMemo().GetFields()[temporal.SchedulerOwnedMemo], &owned))
	require.Equal(t, head+1, owned.From)
	require.Less(t, owned.To, head+100)

	at := nodeHead(t, node.HTTPURL)
	waitIndexed(t, store, chainID, at+5, 30*time.Second)
	requireNoIndexingAbove(t, chainID, nodeHead(t, node.HTTPURL)+1)
	last, _, err := store.LastIndexed(ctx, chainID)
	require.NoError(t, err)
	require.Less(t, last, at+100, "no phantom height was indexed")
	requireSameChain(t, rawConn(t), nodeClient(t, node.HTTPURL), chainID, 0, at+5)
}
