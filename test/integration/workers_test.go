package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/internal/testkit"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/loadgen"
	"github.com/tideline-dev/tideline/pkg/localstack"
)

// fetchCounter counts, per height, the full-block fetches
// (eth_getBlockByNumber with transactions) and receipt fetches
// (eth_getBlockReceipts, asked by block hash) that pass a proxy in front
// of the node, single calls and batch elements alike.
type fetchCounter struct {
	mu       sync.Mutex
	blocks   map[uint64]int
	receipts map[uint64]int
	hashes   map[string]uint64 // block hash -> height, from the block answers
	pending  map[string]int    // receipts asked for a hash not yet seen in an answer
}

func newFetchCounter() *fetchCounter {
	return &fetchCounter{blocks: map[uint64]int{}, receipts: map[uint64]int{}, hashes: map[string]uint64{}, pending: map[string]int{}}
}

// observe is a rewritingProxy's rewrite that changes nothing.
func (c *fetchCounter) observe(call rpcMessage, answer *rpcMessage) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch call.Method {
	case "eth_getBlockByNumber":
		if len(call.Params) < 2 || call.Params[1] != true {
			return false // a header (head confirmation), not a fetch to index
		}
		hexHeight, _ := call.Params[0].(string)
		h, err := strconv.ParseUint(strings.TrimPrefix(hexHeight, "0x"), 16, 64)
		if err != nil {
			return false
		}
		c.blocks[h]++
		var b struct {
			Hash string `json:"hash"`
		}
		if json.Unmarshal(answer.Result, &b) == nil && b.Hash != "" {
			c.hashes[b.Hash] = h
			c.receipts[h] += c.pending[b.Hash]
			delete(c.pending, b.Hash)
		}
	case "eth_getBlockReceipts":
		hash, _ := call.Params[0].(string)
		if h, ok := c.hashes[hash]; ok {
			c.receipts[h]++
		} else {
			c.pending[hash]++
		}
	}
	return false
}

func (c *fetchCounter) counts(h uint64) (blocks, receipts int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.blocks[h], c.receipts[h]
}

// Two worker processes (the real binary) serve one chain with push on: a
// live anvil chain (a block a second, with transactions) after a
// 1,500-height backlog. Both follow the head stream; the IndexBlock
// activity is the only fetcher of a single height. Every height is stored
// once; each live head is fetched once in total (at the JSON-RPC proxy
// both workers use), not once per worker: the second follower's start is
// refused by Temporal and counted as push's duplicate; one scheduler took
// the backlog; and each live height is one IndexBlock workflow, started
// live, with its search attributes.
func TestTwoWorkersIndexEachHeadOnce(t *testing.T) {
	const chainID = "it-two-workers"
	const backlog = 1500
	const live = 15 // live heights watched after the catch-up
	node, err := localstack.StartAnvil(filepath.Join(stack.dir, chainID), localstack.AnvilOptions{BlockTime: time.Second})
	require.NoError(t, err)
	t.Cleanup(node.Stop)
	gen, err := loadgen.New(context.Background(), node.HTTPURL, zap.NewNop(), loadgen.Config{PrivateKey: localstack.AnvilDefaultKey})
	require.NoError(t, err)
	require.NoError(t, gen.MineEmpty(context.Background(), backlog))
	gen.Close()
	traffic(t, node.HTTPURL)

	fetches := newFetchCounter()
	proxy := httptest.NewServer(&rewritingProxy{target: node.HTTPURL, rewrite: fetches.observe})
	t.Cleanup(proxy.Close)

	bin := buildIndexer(t)
	store := openStore(t)
	var addrs []string
	for i := range 2 {
		port, err := localstack.FreePort()
		require.NoError(t, err)
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		addrs = append(addrs, addr)
		// Production settings where they matter here: HeadScan every 10 s,
		// ranges for the backlog, push with the default lag threshold.
		cfgPath := writeConfig(t, chainID, proxy.URL, addr, map[string]any{
			"endpoints": map[string]any{"local": proxy.URL, "ws": node.WSURL},
			"push":      map[string]any{"endpoint": "ws"},
			"headscan":  map[string]any{"interval": "10s"},
			"scheduler": map[string]any{"range_size": 1000},
		})
		startWorkerProcess(t, fmt.Sprintf("worker-%d", i), bin, cfgPath)
	}
	waitFor(t, time.Minute, "both followers healthy", func() (bool, string) {
		a, b := readPushMetrics(t, addrs[0], chainID), readPushMetrics(t, addrs[1], chainID)
		return a.Healthy == 1 && b.Healthy == 1, fmt.Sprintf("%+v / %+v", a, b)
	})
	// Heights the node had before both followers were healthy may have
	// been started by pull: a HeadScan reads its own process's follower,
	// which may not have delivered a head yet. The live claims start above.
	healthyAt := nodeHead(t, node.HTTPURL)

	// The backlog went to one scheduler; everything above it is live.
	var sched []listed
	waitFor(t, time.Minute, "the scheduler listed", func() (bool, string) {
		sched = listWorkflows(t, fmt.Sprintf("WorkflowType = 'Scheduler' AND ChainID = '%s'", chainID))
		return len(sched) > 0, "none yet"
	})
	owned := uint64(sched[0].To)
	require.GreaterOrEqual(t, owned, uint64(backlog))
	waitIndexed(t, store, chainID, owned, 2*time.Minute)
	caughtUp := nodeHead(t, node.HTTPURL)
	target := caughtUp + live
	waitFor(t, time.Minute, fmt.Sprintf("head %d", target), func() (bool, string) {
		h := nodeHead(t, node.HTTPURL)
		return h >= target, fmt.Sprintf("head %d", h)
	})
	head := nodeHead(t, node.HTTPURL)
	waitIndexed(t, store, chainID, head, time.Minute)
	requireSameChain(t, rawConn(t), nodeClient(t, node.HTTPURL), chainID, 0, head)
	requireStoredOnce(t, chainID, head, addrs...)

	sched = listWorkflows(t, fmt.Sprintf("WorkflowType = 'Scheduler' AND ChainID = '%s'", chainID))
	require.Len(t, sched, 1, "one scheduler run for the chain: %+v", sched)
	require.Equal(t, string(types.IndexModeScheduler), sched[0].Mode)

	// Each live height: one IndexBlock run, started live, fetched once by
	// it. Besides, each scan run (HeadScan, GapScan) confirms the head it
	// reads by asking for that block (the phantom-head check), whichever
	// worker runs it: at most one more fetch of a height per scan run.
	scans := listWorkflows(t, fmt.Sprintf("ChainID = '%s' AND WorkflowType IN ('HeadScan', 'GapScan')", chainID))
	from := max(owned, healthyAt) + 1
	runs := indexRuns(t, chainID, from, head)
	var blockFetches, receiptFetches, others int
	for h := from; h <= head; h++ {
		live, n := liveRun(t, runs[h])
		require.NotNil(t, live, "height %d has no IndexBlock run started live: %+v", h, runs[h])
		others += n
		b, r := fetches.counts(h)
		require.GreaterOrEqual(t, b, 1, "height %d never fetched", h)
		require.LessOrEqual(t, b, 3, "height %d fetched %d times", h, b)
		require.LessOrEqual(t, r, 1, "receipts of height %d fetched %d times: only its IndexBlock asks for them", h, r)
		blockFetches += b
		receiptFetches += r
	}
	n := int(head - from + 1)
	var pushDups, pullDups float64
	for _, addr := range addrs {
		m := readPushMetrics(t, addr, chainID)
		t.Logf("worker %s: %+v", addr, m)
		pushDups += m.DupPush
		pullDups += m.DupPull
	}
	t.Logf("%d live heights (%d..%d): %d block fetches, %d receipt fetches in total; %d scan runs; %d other runs of live heights; push duplicates %v, pull duplicates %v",
		n, from, head, blockFetches, receiptFetches, len(scans), others, pushDups, pullDups)
	require.LessOrEqual(t, others, len(scans), "at most one extra (pull's, ended at once) run per scan run")
	// Besides its IndexBlock's fetch and the scans' head checks, a live
	// height may be read again by the reorg check of the height above it
	// when that one is written first (two workers write in parallel; the
	// check anchors it to the highest stored block below). So the bound is
	// the claim itself: fewer fetches than one per worker and height. The
	// receipts, which only IndexBlock asks for, are at most once each.
	require.Less(t, blockFetches, 2*n, "each live height fetched once (plus head checks and anchors), not once per worker")
	require.Positive(t, receiptFetches)
	require.GreaterOrEqual(t, pushDups, float64(n-2), "the second follower's start of each head was refused, and counted")
	for _, addr := range addrs {
		require.Positive(t, testkit.Sum(t, testkit.Scrape(t, addr), "indexer_heights_indexed_total", map[string]string{"chain_id": chainID}),
			"worker %s indexed heights too: both serve the chain's queues", addr)
	}
}
