package activity_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/storage"
)

func writeHeights(t *testing.T, s *storage.ClickHouse, chainID string, hs ...uint64) {
	t.Helper()
	for _, h := range hs {
		require.NoError(t, s.WriteBlocks(context.Background(), chainID, []*chaindata.BlockData{{Block: chaindata.Block{
			Number: h, Hash: fmt.Sprintf("0x%064x", h+1), ParentHash: fmt.Sprintf("0x%064x", h), Timestamp: 1_700_000_000 + h,
		}}}))
	}
}

// Notation: 0..5 7 = heights indexed; W = watermark; S = saved watermark.
func TestWatermarkAdvancesOverClosedGapsAndPersists(t *testing.T) {
	const chain = "wm"
	acts, store := newActivities(t, chain, 0)
	ctx := context.Background()

	// nothing indexed: no watermark, nothing saved
	wm, err := acts.Watermark(ctx, chain)
	require.NoError(t, err)
	require.False(t, wm.Found)
	_, saved, err := store.LoadState(ctx, chain, storage.StateWatermark)
	require.NoError(t, err)
	require.False(t, saved)

	// 0..5 7 → W=5, S=5: 7 finished out of order and does not count yet
	writeHeights(t, store, chain, 0, 1, 2, 3, 4, 5, 7)
	wm, err = acts.Watermark(ctx, chain)
	require.NoError(t, err)
	require.Equal(t, types.WatermarkResult{Height: 5, Found: true}, wm)
	s, _, err := store.LoadState(ctx, chain, storage.StateWatermark)
	require.NoError(t, err)
	require.Equal(t, uint64(5), s)

	// 6 closes the gap → W=7, S=7
	writeHeights(t, store, chain, 6)
	wm, err = acts.Watermark(ctx, chain)
	require.NoError(t, err)
	require.Equal(t, uint64(7), wm.Height)
	s, _, err = store.LoadState(ctx, chain, storage.StateWatermark)
	require.NoError(t, err)
	require.Equal(t, uint64(7), s)

	// A bookmark pointing at an unindexed height (tables restored from an
	// older backup) is not trusted: the data decides.
	require.NoError(t, store.SaveState(ctx, chain, storage.StateWatermark, 100))
	wm, err = acts.Watermark(ctx, chain)
	require.NoError(t, err)
	require.Equal(t, uint64(7), wm.Height)
	s, _, err = store.LoadState(ctx, chain, storage.StateWatermark)
	require.NoError(t, err)
	require.Equal(t, uint64(7), s)
}

// A chain that starts at a configured height: the leading heights below it
// are not gaps, and a hole at the start height means no watermark.
func TestWatermarkFromStartHeight(t *testing.T) {
	const chain = "wm-start"
	acts, store := newActivities(t, chain, 1000)
	ctx := context.Background()
	writeHeights(t, store, chain, 1001, 1002)
	wm, err := acts.Watermark(ctx, chain)
	require.NoError(t, err)
	require.False(t, wm.Found, "1000 is missing")
	writeHeights(t, store, chain, 1000)
	wm, err = acts.Watermark(ctx, chain)
	require.NoError(t, err)
	require.Equal(t, types.WatermarkResult{Height: 1002, Found: true, Floor: 1000}, wm)
}

// Heights at or below the pruned height are gone on purpose: the
// watermark starts above them, so it is found even when their marks are
// gone too (dropped by an operator, or a database restored without them),
// and the floor tells the scans where to start.
func TestWatermarkStartsAboveThePrunedHeight(t *testing.T) {
	const chain = "wm-pruned"
	acts, store := newActivities(t, chain, 0)
	ctx := context.Background()
	writeHeights(t, store, chain, 11, 12, 13)
	wm, err := acts.Watermark(ctx, chain)
	require.NoError(t, err)
	require.Equal(t, types.WatermarkResult{Found: false, Floor: 0}, wm, "0-10 are holes until pruned")
	require.NoError(t, store.SaveState(ctx, chain, storage.StatePrunedHeight, 10))
	wm, err = acts.Watermark(ctx, chain)
	require.NoError(t, err)
	require.Equal(t, types.WatermarkResult{Height: 13, Found: true, Floor: 11}, wm)
}
