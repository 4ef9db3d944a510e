package activity_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	sdktemporal "go.temporal.io/sdk/temporal"

	"github.com/tideline-dev/tideline/internal/testkit"
	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/indexer/activity"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
)

// A node whose chain differs from the stored one below the confirmation
// depth (here: from height 5 on, with a depth of 3) is not followed: the
// stored data stays as it was, every write of the chain is refused with
// ErrTypeChainHalted (block by block and in ranges), and the gauge says
// so. When the node serves the stored chain again, writes resume.
func TestDeepReorgHoldsTheChainsWrites(t *testing.T) {
	defer activity.SetHoldRecheck(0)()
	f := newReorgFixture(t, 3)
	f.node.grow('a', 20, func(h uint64) int { return int(h % 2) })
	f.index(span(0, 20)...)
	f.requireStoredIsNode()
	before, err := f.store.StoredBlocks(context.Background(), f.chainID, 0, 100)
	require.NoError(t, err)

	f.node.rollback(4)
	f.node.grow('b', 22, func(uint64) int { return 1 })
	requireHeld := func(h uint64) {
		t.Helper()
		_, err := f.env.ExecuteActivity(f.acts.IndexBlock, types.IndexBlockInput{ChainID: f.chainID, Height: h})
		var app *sdktemporal.ApplicationError
		require.True(t, errors.As(err, &app), "height %d: %v", h, err)
		require.Equal(t, activity.ErrTypeChainHalted, app.Type(), "height %d: %v", h, err)
	}
	requireHeld(21) // finds it: 18..20 differ, 18 is the bottom of the window
	requireHeld(22) // a height whose window has nothing stored is held too
	requireHeld(3)  // and so is a height far below the head
	_, err = f.env.ExecuteActivity(f.acts.IndexRange, types.IndexRangeInput{ChainID: f.chainID, Range: chaindata.HeightRange{From: 21, To: 22}})
	var app *sdktemporal.ApplicationError
	require.True(t, errors.As(err, &app), "%v", err)
	require.Equal(t, activity.ErrTypeChainHalted, app.Type())

	after, err := f.store.StoredBlocks(context.Background(), f.chainID, 0, 100)
	require.NoError(t, err)
	require.Equal(t, before, after, "nothing stored changed")
	require.Equal(t, 1.0, testkit.Value(t, f.acts.Metrics.ChainHalted.WithLabelValues(f.chainID)))
	require.Equal(t, 1.0, testkit.Value(t, f.acts.Metrics.DeepReorgs.WithLabelValues(f.chainID)))
	require.Equal(t, 0.0, f.reorgs(), "no repair")
	entries := f.logs.FilterMessageSnippet("writes held").All()
	require.Len(t, entries, 1)
	require.Equal(t, uint64(18), entries[0].ContextMap()["lowest_differing"])

	// The node comes back to the stored chain: writes resume.
	f.node.rollback(4)
	f.node.grow('a', 22, func(h uint64) int { return int(h % 2) })
	f.index(21, 22)
	f.requireStoredIsNode()
	require.Equal(t, 0.0, testkit.Value(t, f.acts.Metrics.ChainHalted.WithLabelValues(f.chainID)))
}

// A node whose genesis differs from the stored one is never followed, even
// when the chain is younger than the confirmation depth.
func TestReorgDownToGenesisHoldsTheChainsWrites(t *testing.T) {
	f := newReorgFixture(t, 64)
	f.node.grow('a', 5, func(uint64) int { return 1 })
	f.index(span(0, 5)...)
	f.node.rollback(0)
	f.node.blocks = f.node.blocks[:0]
	f.node.grow('b', 6, func(uint64) int { return 1 })
	_, err := f.env.ExecuteActivity(f.acts.IndexBlock, types.IndexBlockInput{ChainID: f.chainID, Height: 6})
	var app *sdktemporal.ApplicationError
	require.True(t, errors.As(err, &app), "%v", err)
	require.Equal(t, activity.ErrTypeChainHalted, app.Type())
	stored, err := f.store.StoredBlocks(context.Background(), f.chainID, 0, 100)
	require.NoError(t, err)
	require.Len(t, stored, 6)
	for _, s := range stored {
		require.Equal(t, byte('a'), s.Hash[2], "height %d kept its stored block", s.Number)
	}
}

// A height written across a gap (the heights just below it not stored
// yet, as when heights finish out of order) has no parent link to check;
// it is anchored on the highest stored block below it instead. A node of
// another history (same chain id, other blocks from genesis on) differs
// there, so the write holds the chain instead of storing the other
// history's block.
func TestWriteAcrossAGapOverAnotherHistoryHoldsTheChain(t *testing.T) {
	f := newReorgFixture(t, 64)
	f.node.grow('a', 10, func(uint64) int { return 1 })
	f.index(span(0, 10)...)
	f.node.rollback(0)
	f.node.blocks = f.node.blocks[:0]
	f.node.grow('b', 20, func(uint64) int { return 1 })
	_, err := f.env.ExecuteActivity(f.acts.IndexBlock, types.IndexBlockInput{ChainID: f.chainID, Height: 15})
	var app *sdktemporal.ApplicationError
	require.True(t, errors.As(err, &app), "%v", err)
	require.Equal(t, activity.ErrTypeChainHalted, app.Type())
	stored, err := f.store.StoredBlocks(context.Background(), f.chainID, 0, 100)
	require.NoError(t, err)
	require.Len(t, stored, 11, "nothing of the other history is stored")
	for _, s := range stored {
		require.Equal(t, byte('a'), s.Hash[2], "height %d kept its stored block", s.Number)
	}
}

// Across a gap, a real reorganisation below the highest stored block is
// repaired as usual: the anchor differs, the repair walks down to the
// common ancestor and re-indexes the orphaned heights.
func TestWriteAcrossAGapRepairsAReorgBelowIt(t *testing.T) {
	f := newReorgFixture(t, 64)
	f.node.grow('a', 10, func(uint64) int { return 1 })
	f.index(span(0, 10)...)
	f.node.rollback(8)
	f.node.grow('b', 20, func(uint64) int { return 2 })
	res := f.index(15)
	require.NotNil(t, res[0].Reorg, "the reorganisation below the gap is found")
	require.Equal(t, uint64(8), res[0].Reorg.ForkPoint)
	require.Equal(t, []uint64{9, 10}, res[0].Reorg.Reindexed)
	require.Equal(t, 0.0, testkit.Value(t, f.acts.Metrics.ChainHalted.WithLabelValues(f.chainID)))
	f.index(append(span(11, 14), span(16, 20)...)...)
	f.requireStoredIsNode()
}
