package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/localstack"
)

// Answers of a node that are wrong in ways a real deployment meets, on the
// real stack (issue 9; the table in pkg/indexer/workflow/README.md). Each
// test ends with the stored chain equal to the node's, no height skipped.

// laggingProxy stands for a load balancer over two replicas, one of them
// `lag` heights behind: while on, every other HTTP request goes to the
// lagging one, which answers a lower head and has no block above it.
type laggingProxy struct {
	target             string
	lag                uint64
	on                 atomic.Bool
	requests           atomic.Uint64 // requests seen while on
	head               atomic.Uint64 // the real head, from the answers
	lowHeads, noBlocks atomic.Int32
}

func (p *laggingProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	lagging := p.on.Load() && p.requests.Add(1)%2 == 1
	rp := rewritingProxy{target: p.target, rewrite: func(call rpcMessage, answer *rpcMessage) bool {
		return p.rewriteAnswer(lagging, call, answer)
	}}
	rp.ServeHTTP(w, r)
}

func (p *laggingProxy) rewriteAnswer(lagging bool, call rpcMessage, answer *rpcMessage) bool {
	var h hexutil.Uint64
	if call.Method == "eth_blockNumber" && json.Unmarshal(answer.Result, &h) == nil {
		for old := p.head.Load(); uint64(h) > old && !p.head.CompareAndSwap(old, uint64(h)); old = p.head.Load() {
		}
	}
	head := p.head.Load()
	if !lagging || head < p.lag {
		return false
	}
	behind := head - p.lag
	switch call.Method {
	case "eth_blockNumber":
		answer.Result, _ = json.Marshal(hexutil.Uint64(behind))
		p.lowHeads.Add(1)
		return true
	case "eth_getBlockByNumber":
		s, _ := call.Params[0].(string)
		n, err := hexutil.DecodeUint64(s)
		if err != nil || n <= behind {
			return false
		}
		answer.Result, answer.Error = json.RawMessage("null"), nil
		p.noBlocks.Add(1)
		return true
	}
	return false
}

// A head going backwards (a lagging replica behind a load balancer) while
// the chain grows: live heights keep being indexed within a few block
// times, none is skipped or dropped (heights the lagging replica lacks lie
// below the confirmed head, so they are retried), none above the chain.
func TestLaggingReplicaHeadGoingBackwards(t *testing.T) {
	t.Parallel() // see README.md, "Serial and parallel tests"
	const chainID = "it-lagging"
	node, err := localstack.StartAnvil(filepath.Join(stack.dir, chainID), localstack.AnvilOptions{BlockTime: time.Second})
	require.NoError(t, err)
	t.Cleanup(node.Stop)
	proxy := &laggingProxy{target: node.HTTPURL, lag: 8}
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	waitFor(t, time.Minute, "a chain longer than the lag", func() (bool, string) {
		h := nodeHead(t, node.HTTPURL)
		return h > 10, fmt.Sprintf("head %d", h)
	})
	runWorker(t, chainConfig(chainID, srv.URL))
	store := openStore(t)
	waitIndexed(t, store, chainID, nodeHead(t, node.HTTPURL), time.Minute)

	proxy.on.Store(true)
	at := nodeHead(t, node.HTTPURL)
	waitIndexed(t, store, chainID, at+12, 40*time.Second)
	proxy.on.Store(false)
	require.Positive(t, proxy.lowHeads.Load(), "the lagging replica answered heads")
	require.Positive(t, proxy.noBlocks.Load(), "the lagging replica lacked blocks the indexer asked for")

	end := nodeHead(t, node.HTTPURL)
	waitIndexed(t, store, chainID, end, 40*time.Second)
	requireNoIndexingAbove(t, chainID, nodeHead(t, node.HTTPURL)+1)
	requireSameChain(t, rawConn(t), nodeClient(t, node.HTTPURL), chainID, 0, end)
}

// missingBlockProxy answers "no such block" (null) for one height the
// first `times` it is asked, then honestly.
type missingBlockProxy struct {
	rewritingProxy
	height uint64
	left   atomic.Int32
	nulls  atomic.Int32
}

func newMissingBlockProxy(target string, height uint64, times int32) *missingBlockProxy {
	p := &missingBlockProxy{height: height}
	p.left.Store(times)
	p.rewritingProxy = rewritingProxy{target: target, rewrite: p.hide}
	return p
}

func (p *missingBlockProxy) hide(call rpcMessage, answer *rpcMessage) bool {
	if call.Method != "eth_getBlockByNumber" || len(call.Params) == 0 ||
		call.Params[0] != hexutil.EncodeUint64(p.height) || p.left.Add(-1) < 0 {
		return false
	}
	answer.Result, answer.Error = json.RawMessage("null"), nil
	p.nulls.Add(1)
	return true
}

// A block missing for a height below the head (a node with a hole, a
// replica behind a load balancer) is retried, never skipped: the watermark
// waits for it and passes it once the node serves it.
func TestMissingBlockBelowTheHeadIsRetried(t *testing.T) {
	t.Parallel() // see README.md, "Serial and parallel tests"
	const chainID = "it-missing-block"
	node, err := localstack.StartAnvil(filepath.Join(stack.dir, chainID), localstack.AnvilOptions{BlockTime: time.Second})
	require.NoError(t, err)
	t.Cleanup(node.Stop)
	const hole, times = 6, 4
	waitFor(t, time.Minute, "heights above the hole", func() (bool, string) {
		h := nodeHead(t, node.HTTPURL)
		return h >= hole+4, fmt.Sprintf("head %d", h)
	})
	proxy := newMissingBlockProxy(node.HTTPURL, hole, times)
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	runWorker(t, chainConfig(chainID, srv.URL))
	store := openStore(t)

	waitFor(t, time.Minute, "the hole asked for and refused", func() (bool, string) {
		return proxy.nulls.Load() >= times, fmt.Sprintf("%d of %d refusals", proxy.nulls.Load(), times)
	})
	head := nodeHead(t, node.HTTPURL)
	waitIndexed(t, store, chainID, head, time.Minute)
	wm, found, err := store.Watermark(context.Background(), chainID, 0)
	require.NoError(t, err)
	require.True(t, found)
	require.Greater(t, wm, uint64(hole), "the watermark passed the hole")
	requireSameChain(t, rawConn(t), nodeClient(t, node.HTTPURL), chainID, 0, head)
}

// forkReceiptsProxy answers the receipts of one block the first `times`
// they are asked as a node on another fork would: the same height, another
// block hash on every receipt and log.
type forkReceiptsProxy struct {
	rewritingProxy
	height uint64
	left   atomic.Int32
	forged atomic.Int32
}

const otherFork = "0xf0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0"

func newForkReceiptsProxy(target string, height uint64, times int32) *forkReceiptsProxy {
	p := &forkReceiptsProxy{height: height}
	p.left.Store(times)
	p.rewritingProxy = rewritingProxy{target: target, rewrite: p.forge}
	return p
}

func (p *forkReceiptsProxy) forge(call rpcMessage, answer *rpcMessage) bool {
	if call.Method != "eth_getBlockReceipts" && call.Method != "eth_getTransactionReceipt" {
		return false
	}
	var receipts []map[string]any
	single := call.Method == "eth_getTransactionReceipt"
	if single {
		var r map[string]any
		if json.Unmarshal(answer.Result, &r) != nil || r == nil {
			return false
		}
		receipts = []map[string]any{r}
	} else if json.Unmarshal(answer.Result, &receipts) != nil || len(receipts) == 0 {
		return false
	}
	if receipts[0]["blockNumber"] != hexutil.EncodeUint64(p.height) || p.left.Add(-1) < 0 {
		return false
	}
	for _, r := range receipts {
		r["blockHash"] = otherFork
		logs, _ := r["logs"].([]any)
		for _, l := range logs {
			if m, ok := l.(map[string]any); ok {
				m["blockHash"] = otherFork
			}
		}
	}
	if single {
		answer.Result, _ = json.Marshal(receipts[0])
	} else {
		answer.Result, _ = json.Marshal(receipts)
	}
	p.forged.Add(1)
	return true
}

// Receipts of another fork for a block are refused (they are asked by the
// block's hash and checked against it) and asked again: what is stored is
// the block's own receipts and logs, never the other fork's.
func TestReceiptsFromAnotherForkAreRefused(t *testing.T) {
	t.Parallel() // see README.md, "Serial and parallel tests"
	const chainID = "it-fork-receipts"
	node, err := localstack.StartAnvil(filepath.Join(stack.dir, chainID), localstack.AnvilOptions{})
	require.NoError(t, err)
	t.Cleanup(node.Stop)
	makeTraffic(t, node.HTTPURL, localstack.AnvilDefaultKey, 12)
	head := nodeHead(t, node.HTTPURL)
	// The newest block with logs gets the other fork's receipts.
	blocks := readNode(t, nodeClient(t, node.HTTPURL), 0, head)
	forged := head
	for forged > 0 && blocks[forged].Logs == 0 {
		forged--
	}
	want := blocks[forged]
	require.Positive(t, want.Logs, "no block with logs")

	const times = 3
	proxy := newForkReceiptsProxy(node.HTTPURL, forged, times)
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	runWorker(t, chainConfig(chainID, srv.URL))
	store := openStore(t)
	waitIndexed(t, store, chainID, head, time.Minute)
	require.EqualValues(t, times, proxy.forged.Load(), "the other fork's receipts were served")

	conn := rawConn(t)
	requireSameChain(t, conn, nodeClient(t, node.HTTPURL), chainID, 0, head)
	for _, table := range []string{"transactions", "logs"} {
		var other uint64
		require.NoError(t, conn.QueryRow(context.Background(),
			"SELECT count() FROM "+table+" FINAL WHERE chain_id = ? AND block_number = ? AND block_hash != ?",
			chainID, forged, want.Hash).Scan(&other))
		require.Zero(t, other, "%s rows of height %d with another block hash", table, forged)
	}
}
