package activity_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/tideline-dev/tideline/internal/testkit"
	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/indexer/activity"
	"github.com/tideline-dev/tideline/pkg/indexer/jobs/aggregate"
	"github.com/tideline-dev/tideline/pkg/indexer/jobs/retention"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/metrics"
	"github.com/tideline-dev/tideline/pkg/rpc"
	"github.com/tideline-dev/tideline/pkg/storage"
	"github.com/tideline-dev/tideline/pkg/temporal"
	"github.com/tideline-dev/tideline/pkg/tokens"
)

// fakeChain is a node whose canonical chain the test rewrites at will.
type fakeChain struct {
	mu     sync.Mutex
	blocks []*chaindata.BlockData // index = height
	calls  map[string]int
	refuse map[uint64]error // what BlockByHeight answers instead of these blocks
}

func (f *fakeChain) HeadHeight(context.Context) (uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["head"]++
	return uint64(len(f.blocks) - 1), nil
}

func (f *fakeChain) BlockByHeight(_ context.Context, h uint64) (*chaindata.BlockData, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["block"]++
	if h >= uint64(len(f.blocks)) {
		return nil, fmt.Errorf("fake node: block %d: %w", h, rpc.ErrBlockNotFound)
	}
	if err := f.refuse[h]; err != nil {
		return nil, err
	}
	d := *f.blocks[h]
	// Receipts fill these; a block read alone has none.
	d.Logs = nil
	return &d, nil
}

func (f *fakeChain) Receipts(_ context.Context, d *chaindata.BlockData) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["receipts"]++
	h := d.Block.Number
	if h >= uint64(len(f.blocks)) || f.blocks[h].Block.Hash != d.Block.Hash {
		return fmt.Errorf("fake node: receipts of %s: %w", d.Block.Hash, rpc.ErrBlockNotFound)
	}
	d.Logs = f.blocks[h].Logs
	return nil
}

func (f *fakeChain) Close() {}

func (f *fakeChain) count(call string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[call]
}

// grow appends blocks of branch b until the head is `to`; txs(h) sets how
// many transactions (each with one log) block h has.
func (f *fakeChain) grow(b byte, to uint64, txs func(uint64) int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for h := uint64(len(f.blocks)); h <= to; h++ {
		parent := ""
		if h > 0 {
			parent = f.blocks[h-1].Block.Hash
		}
		f.blocks = append(f.blocks, fakeBlock(b, h, parent, txs(h)))
	}
}

// rollback drops every block above h.
func (f *fakeChain) rollback(h uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.blocks = f.blocks[:h+1]
}

func (f *fakeChain) block(h uint64) *chaindata.BlockData {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.blocks[h]
}

func fakeBlock(branch byte, h uint64, parent string, txs int) *chaindata.BlockData {
	hash := fmt.Sprintf("0x%c%063x", branch, h)
	d := &chaindata.BlockData{Block: chaindata.Block{
		Number: h, Hash: hash, ParentHash: parent, Timestamp: 1_700_000_000 + h,
		TxCount: uint32(txs), LogCount: uint32(txs), Size: 500 + h,
	}}
	for i := range txs {
		tx := fmt.Sprintf("0x%c%031x%032x", branch, h, i)
		d.Transactions = append(d.Transactions, chaindata.Transaction{
			BlockNumber: h, BlockHash: hash, Index: uint32(i), Hash: tx, Value: "0", Status: 1, LogCount: 1,
			From: fmt.Sprintf("0x%040x", 0xf0+i), To: fmt.Sprintf("0x%040x", 0xe0+i),
		})
		// An ERC-20 transfer of the sender's, so that every table has rows
		// (token_transfers and its look-ups too).
		d.Logs = append(d.Logs, chaindata.Log{
			BlockNumber: h, BlockHash: hash, TxHash: tx, TxIndex: uint32(i), LogIndex: uint32(i),
			Address: fmt.Sprintf("0x%040x", 0xc0),
			Topics:  []string{tokens.TopicTransfer, fmt.Sprintf("0x%064x", 0xf0+i), fmt.Sprintf("0x%064x", 0xe0+i)},
			Data:    fmt.Sprintf("0x%064x", h+1),
		})
	}
	return d
}

type reorgFixture struct {
	t       *testing.T
	chainID string
	node    *fakeChain
	acts    *activity.Activities
	store   *storage.ClickHouse
	logs    *observer.ObservedLogs
	env     *testsuite.TestActivityEnvironment
	// agg is the chain's aggregator (newAggregateFixture only), told of
	// the repairs as the worker wires it.
	agg *aggregate.Job
	// ret is the chain's retention (newPruneFixture only).
	ret *retention.Job
}

func newReorgFixture(t *testing.T, depth int) *reorgFixture {
	t.Helper()
	// A chain ID new to this run: the test's database outlives -count runs.
	chainID := fmt.Sprintf("rg%d", time.Now().UnixNano())
	_, store := newActivities(t, chainID, 0) // a database of the test's own
	core, logs := observer.New(zap.InfoLevel)
	ch := config.DefaultChain()
	ch.ConfirmationDepth = depth
	node := &fakeChain{calls: map[string]int{}}
	acts := &activity.Activities{
		Chain:   activity.NewChainSetup(chainID, node, temporal.NewOptions(chainID, ch.Index.ActivityTimeout), ch),
		Store:   store,
		Metrics: metrics.New(prometheus.NewRegistry()),
		Log:     zap.New(core),
	}
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(acts)
	return &reorgFixture{t: t, chainID: chainID, node: node, acts: acts, store: store, logs: logs, env: env}
}

func (f *reorgFixture) index(hs ...uint64) []types.IndexBlockResult {
	f.t.Helper()
	var out []types.IndexBlockResult
	for _, h := range hs {
		v, err := f.env.ExecuteActivity(f.acts.IndexBlock, types.IndexBlockInput{ChainID: f.chainID, Height: h})
		require.NoError(f.t, err, "height %d", h)
		var res types.IndexBlockResult
		require.NoError(f.t, v.Get(&res))
		out = append(out, res)
	}
	return out
}

func span(from, to uint64) []uint64 {
	var hs []uint64
	for h := from; h <= to; h++ {
		hs = append(hs, h)
	}
	return hs
}

// requireStoredIsNode asserts that the canonical stored rows of 0..head are
// exactly the node's: block hashes and parents, and the logical counts of
// transactions and logs (FINAL, is_canonical = 1).
func (f *reorgFixture) requireStoredIsNode() {
	f.t.Helper()
	ctx := context.Background()
	f.node.mu.Lock()
	blocks := append([]*chaindata.BlockData(nil), f.node.blocks...)
	f.node.mu.Unlock()
	head := uint64(len(blocks) - 1)
	stored, err := f.store.StoredBlocks(ctx, f.chainID, 0, head+100)
	require.NoError(f.t, err)
	var want, got []chaindata.StoredBlock
	var txs, logs uint64
	for _, d := range blocks {
		want = append(want, chaindata.StoredBlock{Number: d.Block.Number, Hash: d.Block.Hash, ParentHash: d.Block.ParentHash, Canonical: true})
		txs += uint64(len(d.Transactions))
		logs += uint64(len(d.Logs))
	}
	for _, s := range stored {
		if s.Canonical {
			got = append(got, s)
		}
	}
	require.Equal(f.t, want, got)
	nb, nt, nl := testkit.CountRows(f.t, clickhouse.Addr, testkit.Database(f.t, "a_"), f.chainID)
	require.Equal(f.t, [3]uint64{head + 1, txs, logs}, [3]uint64{nb, nt, nl})
}

func (f *reorgFixture) reorgs() float64 {
	return testkit.Value(f.t, f.acts.Metrics.Reorgs.WithLabelValues(f.chainID))
}

func (f *reorgFixture) depthObservations() uint64 {
	return testkit.Observed(f.t, f.acts.Metrics.ReorgDepth.WithLabelValues(f.chainID).(prometheus.Histogram)).GetSampleCount()
}

// A reorganisation of depth 3 with fewer transactions: indexing the next
// block finds it, re-indexes the three heights and supersedes the rows the
// orphaned blocks had beyond the new ones.
func TestIndexBlockRepairsReorgBelowTheHead(t *testing.T) {
	f := newReorgFixture(t, 64)
	f.node.grow('a', 10, func(h uint64) int { return int(h%3) + 2 })
	for _, res := range f.index(span(0, 10)...) {
		require.Nil(t, res.Reorg)
	}
	f.requireStoredIsNode()

	f.node.rollback(7)
	f.node.grow('b', 11, func(h uint64) int { return int(h % 2) }) // 8..11 with 0 or 1 tx
	res := f.index(11)[0]
	require.Equal(t, &types.ReorgResult{ForkPoint: 7, Depth: 3, Reindexed: []uint64{8, 9, 10}}, res.Reorg)
	require.Equal(t, f.node.block(11).Block.Hash, res.Hash)
	f.requireStoredIsNode()
	require.Equal(t, 1.0, f.reorgs())
	require.Equal(t, uint64(1), f.depthObservations())

	entries := f.logs.FilterMessageSnippet("chain reorganisation").All()
	require.Len(t, entries, 1)
	fields := entries[0].ContextMap()
	require.Equal(t, uint64(7), fields["fork_point"])
	require.Equal(t, uint64(3), fields["depth"])
	require.Equal(t, uint64(11), fields["height"])
	require.Equal(t, f.chainID, fields["chain_id"])

	// The next block is plain again.
	f.node.grow('b', 12, func(uint64) int { return 1 })
	require.Nil(t, f.index(12)[0].Reorg)
	require.Equal(t, 1.0, f.reorgs())
	f.requireStoredIsNode()
}

// The chain got shorter and a height the node no longer has is stored: it
// is removed (tombstones) when a block below is indexed, and rewritten once
// the node has a block there again.
func TestIndexBlockRemovesHeightsTheNodeLost(t *testing.T) {
	f := newReorgFixture(t, 64)
	f.node.grow('a', 11, func(uint64) int { return 2 })
	f.index(append(span(0, 9), 11)...) // 10 still to do
	f.node.rollback(8)
	f.node.grow('b', 10, func(uint64) int { return 1 })

	res := f.index(10)[0]
	require.Equal(t, &types.ReorgResult{ForkPoint: 8, Depth: 3, Reindexed: []uint64{9}, Removed: []uint64{11}}, res.Reorg)
	f.requireStoredIsNode()

	// 11 keeps its mark, so only the next block brings it back.
	f.node.grow('b', 12, func(uint64) int { return 3 })
	res = f.index(12)[0]
	require.Equal(t, &types.ReorgResult{ForkPoint: 10, Depth: 1, Reindexed: []uint64{11}}, res.Reorg)
	f.requireStoredIsNode()
	require.Equal(t, 2.0, f.reorgs())
}

// A late write of an orphaned block (an activity that fetched before the
// reorganisation and wrote after its repair) breaks the stored chain; the
// next block indexed near the head repairs it.
func TestIndexBlockRepairsALateOrphanWrite(t *testing.T) {
	f := newReorgFixture(t, 64)
	f.node.grow('a', 8, func(uint64) int { return 1 })
	f.index(span(0, 8)...)
	orphan := fakeBlock('z', 5, f.node.block(4).Block.Hash, 3)
	require.NoError(t, f.store.WriteBlocks(context.Background(), f.chainID, []*chaindata.BlockData{orphan}))

	f.node.grow('a', 9, func(uint64) int { return 1 })
	res := f.index(9)[0]
	require.Equal(t, &types.ReorgResult{ForkPoint: 4, Depth: 1, Reindexed: []uint64{5}}, res.Reorg)
	f.requireStoredIsNode()
}

// Far below the head, or with confirmation_depth 0, nothing is checked: no
// extra node calls, and a broken stored chain is left alone.
func TestIndexBlockChecksOnlyNearTheHead(t *testing.T) {
	for _, depth := range []int{0, 3} {
		t.Run(fmt.Sprint("depth ", depth), func(t *testing.T) {
			f := newReorgFixture(t, depth)
			f.node.grow('a', 20, func(uint64) int { return 1 })
			f.index(span(0, 10)...)
			orphan := fakeBlock('z', 5, f.node.block(4).Block.Hash, 1)
			require.NoError(t, f.store.WriteBlocks(context.Background(), f.chainID, []*chaindata.BlockData{orphan}))
			blockCalls := f.node.count("block")
			require.Nil(t, f.index(11)[0].Reorg)
			require.Equal(t, blockCalls+1, f.node.count("block"), "only the fetch of height 11")
			require.Equal(t, 0.0, f.reorgs())
			if depth > 0 {
				// 18 is within 3 of the head (20) but its window does not
				// reach 5: nothing to repair there either.
				require.Nil(t, f.index(18)[0].Reorg)
			}
		})
	}
}

// Several heights indexed at once after one reorganisation repair it once.
func TestConcurrentIndexingRepairsOnce(t *testing.T) {
	f := newReorgFixture(t, 64)
	f.node.grow('a', 15, func(uint64) int { return 2 })
	f.index(span(0, 15)...)
	f.node.rollback(10)
	f.node.grow('b', 20, func(uint64) int { return 1 })

	var wg sync.WaitGroup
	errs := make(chan error, 5)
	for _, h := range span(16, 20) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var suite testsuite.WorkflowTestSuite
			env := suite.NewTestActivityEnvironment()
			env.RegisterActivity(f.acts)
			_, err := env.ExecuteActivity(f.acts.IndexBlock, types.IndexBlockInput{ChainID: f.chainID, Height: h})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	f.requireStoredIsNode()
	require.Equal(t, 1.0, f.reorgs())
	var depth strings.Builder
	for _, e := range f.logs.FilterMessageSnippet("chain reorganisation").All() {
		fmt.Fprint(&depth, e.ContextMap()["depth"], " ")
	}
	require.Equal(t, "5 ", depth.String())
}
