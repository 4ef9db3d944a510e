package storage

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/chaindata"
)

// tracedBlock is mixBlock with a call tree per transaction: the call, a
// call with value to a contract unique to (height, variant, transaction),
// which creates a contract in turn, and a reverted staticcall. variant
// changes the addresses, as another block at the height would.
func tracedBlock(n uint64, txs int, variant byte) *chaindata.BlockData {
	d := mixBlock(n, txs, 1)
	if variant != 0 {
		d.Block.Hash = hash(variant, n)
		for i := range d.Transactions {
			d.Transactions[i].BlockHash = d.Block.Hash
			d.Transactions[i].Hash = hash(variant+1, n*1000+uint64(i))
		}
		for i := range d.Logs {
			d.Logs[i].BlockHash = d.Block.Hash
			d.Logs[i].TxHash = d.Transactions[d.Logs[i].TxIndex].Hash
		}
	}
	d.Traced = true
	for i, tx := range d.Transactions {
		callee := fmt.Sprintf("0x%038x%02x", n*1000+uint64(i), variant)
		created := fmt.Sprintf("0x%038x%02x", n*1000+uint64(i), variant+0x80)
		base := chaindata.Trace{BlockNumber: n, BlockHash: d.Block.Hash, TxIndex: uint32(i), TxHash: tx.Hash, Input: "0x", Output: "0x"}
		frames := []chaindata.Trace{
			{Index: 0, Type: chaindata.TraceCall, From: tx.From, To: tx.To, Value: tx.Value, Gas: 90_000, GasUsed: 60_000, Subtraces: 2},
			{Index: 1, Address: []uint32{0}, Type: chaindata.TraceCall, From: tx.To, To: callee, Value: "5", Gas: 50_000, GasUsed: 30_000, Subtraces: 1},
			{Index: 2, Address: []uint32{0, 0}, Type: chaindata.TraceCreate2, From: callee, To: created, Value: "0", Gas: 20_000, GasUsed: 10_000, Input: "0x6080"},
			{Index: 3, Address: []uint32{1}, Type: chaindata.TraceStaticCall, From: tx.To, To: callee, Value: "0", Gas: 9_000, GasUsed: 900,
				Error: "execution reverted", RevertReason: "no", Reverted: true},
		}
		for _, f := range frames {
			t := base
			t.Index, t.Address, t.Type, t.From, t.To, t.Value = f.Index, f.Address, f.Type, f.From, f.To, f.Value
			t.Gas, t.GasUsed, t.Subtraces, t.Error, t.RevertReason, t.Reverted = f.Gas, f.GasUsed, f.Subtraces, f.Error, f.RevertReason, f.Reverted
			if f.Input != "" {
				t.Input = f.Input
			}
			d.Traces = append(d.Traces, t)
		}
	}
	return d
}

// framesOf reads what the Reader serves of the transactions of a height,
// and checks the read of the whole height serves the same.
func framesOf(t *testing.T, c *ClickHouse, n uint64, txs int) []chaindata.Trace {
	t.Helper()
	var out []chaindata.Trace
	for i := range txs {
		fs, err := c.Reader().Traces().TxTraces(testContext(t), "c", Position{Block: n, Index: uint32(i)})
		require.NoError(t, err)
		out = append(out, fs...)
	}
	whole, err := c.Reader().Traces().BlockTraces(testContext(t), "c", n)
	require.NoError(t, err)
	require.Equal(t, out, whole, "BlockTraces of %d", n)
	return out
}

func addressFrames(t *testing.T, c *ClickHouse, addr string, all bool) []TracePosition {
	t.Helper()
	ps, err := c.Reader().Traces().AddressTracePositions(testContext(t), "c", AddressTraceQuery{Address: addr, From: 0, To: 1000, Desc: true, All: all, Limit: 100})
	require.NoError(t, err)
	return ps
}

func TestWriteBlocksWritesTraces(t *testing.T) {
	c := openTest(t)
	ctx := testContext(t)
	blocks := []*chaindata.BlockData{tracedBlock(10, 3, 0), tracedBlock(11, 3, 0), mixBlock(12, 2, 1)}
	require.NoError(t, c.WriteBlocks(ctx, "c", blocks))
	assert.Equal(t, blocks[0].Traces, framesOf(t, c, 10, 3), "stored as written")
	assert.Equal(t, blocks[1].Traces, framesOf(t, c, 11, 3))
	assert.Empty(t, framesOf(t, c, 12, 2))
	traced, err := c.Reader().Traces().TracedHeights(ctx, "c", []uint64{10, 11, 12, 13})
	require.NoError(t, err)
	assert.Equal(t, map[uint64]bool{10: true, 11: true, 12: false}, traced, "the mark says whether the traces are in")

	callee := blocks[0].Traces[1].To
	created := blocks[0].Traces[2].To
	assert.Equal(t, []TracePosition{{10, 0, 3}, {10, 0, 2}, {10, 0, 1}}, addressFrames(t, c, callee, true), "caller, callee; newest first")
	assert.Equal(t, []TracePosition{{10, 0, 2}, {10, 0, 1}}, addressFrames(t, c, callee, false), "the reverted staticcall moves nothing")
	assert.Equal(t, []TracePosition{{10, 0, 2}}, addressFrames(t, c, created, false), "the created contract")
	fs, err := c.Reader().Traces().TracesAt(ctx, "c", []TracePosition{{10, 0, 2}, {11, 2, 3}, {12, 0, 0}})
	require.NoError(t, err)
	assert.Equal(t, []chaindata.Trace{blocks[0].Traces[2], blocks[1].Traces[11]}, fs)
	inner, err := c.Reader().Traces().TracesInRange(ctx, "c", TraceRangeQuery{From: 10, To: 12, Limit: 100})
	require.NoError(t, err)
	assert.Len(t, inner, 12, "two listed frames per transaction, six transactions")
	all, err := c.Reader().Traces().TracesInRange(ctx, "c", TraceRangeQuery{From: 10, To: 12, All: true, Desc: true, Limit: 100})
	require.NoError(t, err)
	assert.Len(t, all, 18)
	assert.Equal(t, uint64(11), all[0].BlockNumber)
}

// A reorganisation rewrites a traced height with another block whose
// trace is smaller: the old frames and their addresses are tombstoned,
// the new ones stored; so is everything on RemoveBlock.
func TestRewriteSupersedesTraces(t *testing.T) {
	c := openTest(t)
	ctx := testContext(t)
	old := tracedBlock(20, 3, 0)
	require.NoError(t, c.WriteBlocks(ctx, "c", []*chaindata.BlockData{old}))
	oldCallee := old.Traces[1].To

	// The same block written without its trace keeps the stored frames.
	bare := mixBlock(20, 3, 1)
	require.NoError(t, c.WriteBlocks(ctx, "c", []*chaindata.BlockData{bare}))
	assert.Equal(t, old.Traces, framesOf(t, c, 20, 3))

	replacement := tracedBlock(20, 2, 7)
	replacement.Traces = slices.DeleteFunc(replacement.Traces, func(f chaindata.Trace) bool { return f.Index == 3 })
	replacement.Traces[0].Subtraces = 1
	replacement.Traces[3].Subtraces = 1
	require.NoError(t, c.WriteBlocks(ctx, "c", []*chaindata.BlockData{replacement}))
	assert.Equal(t, replacement.Traces, framesOf(t, c, 20, 3), "only the new block's frames")
	assert.Empty(t, addressFrames(t, c, oldCallee, true), "the old callee's rows are tombstones")
	assert.Equal(t, []TracePosition{{20, 1, 2}, {20, 1, 1}}, addressFrames(t, c, replacement.Traces[4].To, true))

	// Another block without a trace: nothing of the old trace is left.
	other := mixBlock(20, 1, 1)
	other.Block.Hash = hash('z', 20)
	require.NoError(t, c.WriteBlocks(ctx, "c", []*chaindata.BlockData{other}))
	assert.Empty(t, framesOf(t, c, 20, 3))

	require.NoError(t, c.WriteBlocks(ctx, "c", []*chaindata.BlockData{tracedBlock(21, 2, 0)}))
	require.NoError(t, c.RemoveBlock(ctx, "c", 21))
	assert.Empty(t, framesOf(t, c, 21, 2))
	assert.Empty(t, addressFrames(t, c, tracedBlock(21, 2, 0).Traces[1].To, true))
}

// withTraces gives a test block a call tree per transaction: the call and
// one inner call with value, so that every traces table has rows.
func withTraces(d *chaindata.BlockData) *chaindata.BlockData {
	d.Traced = true
	for i, tx := range d.Transactions {
		base := chaindata.Trace{BlockNumber: d.Block.Number, BlockHash: d.Block.Hash, TxIndex: tx.Index, TxHash: tx.Hash,
			Type: chaindata.TraceCall, Input: "0x", Output: "0x", Value: "1"}
		top, inner := base, base
		top.From, top.To, top.Subtraces = tx.From, tx.To, 1
		inner.Index, inner.Address = 1, []uint32{0}
		inner.From, inner.To = tx.From, fmt.Sprintf("0x%040x", 0xd00+i)
		d.Traces = append(d.Traces, top, inner)
	}
	return d
}

// The backfill's part of the store: the heights indexed without traces,
// newest first; what to trace them with; and WriteTraces, which adds the
// frames and marks the heights traced without rewriting the blocks, and
// leaves out a height whose block changed meanwhile.
func TestWriteTracesFillsIndexedHeights(t *testing.T) {
	c := openTest(t)
	ctx := testContext(t)
	plain := []*chaindata.BlockData{mixBlock(30, 3, 1), mixBlock(31, 2, 1), mixBlock(32, 0, 0), mixBlock(33, 2, 1)}
	require.NoError(t, c.WriteBlocks(ctx, "c", plain))
	require.NoError(t, c.WriteBlocks(ctx, "c", []*chaindata.BlockData{tracedBlock(34, 2, 0)}))
	untraced, err := c.Traces().UntracedHeights(ctx, "c", 0, 100, 10)
	require.NoError(t, err)
	assert.Equal(t, []uint64{33, 32, 31, 30}, untraced)
	limited, err := c.Traces().UntracedHeights(ctx, "c", 30, 32, 2)
	require.NoError(t, err)
	assert.Equal(t, []uint64{32, 31}, limited)

	targets, err := c.Traces().TraceTargets(ctx, "c", []uint64{30, 31, 32, 99})
	require.NoError(t, err)
	require.Len(t, targets, 3)
	assert.Equal(t, plain[0].Block.Hash, targets[30].Block.Hash)
	require.Len(t, targets[30].Transactions, 3)
	assert.Equal(t, plain[0].Transactions[2].Hash, targets[30].Transactions[2].Hash)
	assert.Empty(t, targets[32].Transactions)

	// Height 31 is rewritten with another block before the traces land.
	full30, full31 := tracedBlock(30, 3, 0), tracedBlock(31, 2, 0)
	targets[30].Traces, targets[30].Traced = full30.Traces, true
	targets[31].Traces, targets[31].Traced = full31.Traces, true
	targets[32].Traced = true
	other := mixBlock(31, 1, 1)
	other.Block.Hash = hash('q', 31)
	require.NoError(t, c.WriteBlocks(ctx, "c", []*chaindata.BlockData{other}))
	skipped, err := c.Traces().WriteTraces(ctx, "c", []*chaindata.BlockData{targets[30], targets[31], targets[32]})
	require.NoError(t, err)
	assert.Equal(t, []uint64{31}, skipped)
	assert.Equal(t, full30.Traces, framesOf(t, c, 30, 3))
	assert.Empty(t, framesOf(t, c, 31, 2))
	untraced, err = c.Traces().UntracedHeights(ctx, "c", 0, 100, 10)
	require.NoError(t, err)
	assert.Equal(t, []uint64{33, 31}, untraced)
	blocks, err := c.Reader().BlocksAt(ctx, "c", []uint64{30})
	require.NoError(t, err)
	assert.Equal(t, plain[0].Block.Hash, blocks[0].Hash, "the block is not rewritten")
}
