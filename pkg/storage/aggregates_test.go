package storage

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// BlockCounts reads the canonical block of each height with what it adds
// to the totals: a rewritten height shows its new block, a removed one is
// absent, and unmerged versions (merges stopped) are read as one.
func TestBlockCountsReadTheCanonicalBlocks(t *testing.T) {
	c := openTest(t)
	stopMerges(t, c)
	ctx := testContext(t)
	require.NoError(t, c.WriteBlocks(ctx, "1", blocksOf(sampleBlock(5), sampleBlock(6), sampleBlock(7), sampleBlock(8))))
	require.NoError(t, c.WriteBlocks(ctx, "1", blocksOf(sampleBlock(6)))) // a second version of 6
	fork := forkOf(7, 1, 2)
	require.NoError(t, c.WriteBlocks(ctx, "1", blocksOf(fork)))
	require.NoError(t, c.RemoveBlock(ctx, "1", 8))
	require.NoError(t, c.WriteBlocks(ctx, "2", blocksOf(sampleBlock(6)))) // another chain

	got, err := c.Aggregates().BlockCounts(ctx, "1", 0, 100)
	require.NoError(t, err)
	require.Equal(t, []BlockCount{
		{Number: 5, Hash: hash('b', 5), ParentHash: hash('b', 4), Txs: 2, Logs: 3, Bytes: 1234},
		{Number: 6, Hash: hash('b', 6), ParentHash: hash('b', 5), Txs: 2, Logs: 3, Bytes: 1234},
		{Number: 7, Hash: fork.Block.Hash, ParentHash: hash('b', 6), Txs: 1, Logs: 2, Bytes: 1234},
	}, got)
	got, err = c.Aggregates().BlockCounts(ctx, "1", 6, 6)
	require.NoError(t, err)
	require.Len(t, got, 1)
}

// Aggregates rows are written in one insert and read back per height; a
// height written again (after a rewind) reads as its newest row; the
// highest row is found without a saved height; rows must be consecutive.
func TestAggregateRowsRoundTrip(t *testing.T) {
	c := openTest(t)
	stopMerges(t, c)
	ctx := testContext(t)
	_, found, err := c.Aggregates().LastAggregate(ctx, "1")
	require.NoError(t, err)
	require.False(t, found)

	var rows []AggregateRow
	prev := AggregateRow{}
	for h := uint64(0); h < 5; h++ {
		prev = prev.Add(BlockCount{Number: h, Hash: hash('b', h), Txs: h, Logs: 2 * h, Bytes: 100})
		rows = append(rows, prev)
	}
	require.Equal(t, AggregateRow{Number: 4, BlockHash: hash('b', 4), Txs: 10, Logs: 20, Bytes: 500}, prev)
	require.NoError(t, c.Aggregates().WriteAggregates(ctx, "1", rows))
	got, err := c.Aggregates().AggregateRows(ctx, "1", 0, 10)
	require.NoError(t, err)
	require.Equal(t, rows, got)

	// 3 and 4 again, counted on another block.
	again := []AggregateRow{{Number: 3, BlockHash: hash('f', 3), Txs: 7, Logs: 8, Bytes: 9}, {Number: 4, BlockHash: hash('f', 4), Txs: 8, Logs: 9, Bytes: 10}}
	require.NoError(t, c.Aggregates().WriteAggregates(ctx, "1", again))
	got, err = c.Aggregates().AggregateRows(ctx, "1", 2, 4)
	require.NoError(t, err)
	require.Equal(t, append([]AggregateRow{rows[2]}, again...), got)
	last, found, err := c.Aggregates().LastAggregate(ctx, "1")
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, again[1], last)

	err = c.Aggregates().WriteAggregates(ctx, "1", []AggregateRow{{Number: 5}, {Number: 7}})
	require.ErrorContains(t, err, "height 7 follows 5")
	_, found, err = c.Aggregates().LastAggregate(ctx, "2")
	require.NoError(t, err)
	require.False(t, found, "rows are per chain")
}
