package workflow_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
)

// Heights at or below the pruned height are gone on purpose: when the
// watermark is not found (its floor not indexed), GapScan looks for gaps
// from the floor the Watermark activity reports, not from the start
// height, so the pruned heights are never gaps and never started.
func TestGapScanStartsAtThePrunedFloor(t *testing.T) {
	f := &fakeChain{head: 5000, watermark: types.WatermarkResult{Found: false, Floor: 1001},
		gaps: []chaindata.HeightRange{{From: 1001, To: 1010}}}
	r := gapRecorder(5000)
	res := runGapScan(t, newWorkflows(chainConfig(nil)), f, r)
	require.NoError(t, r.err)
	require.Equal(t, []types.MissingInput{{ChainID: chainID, Range: chaindata.HeightRange{From: 1001, To: 5000}, Limit: 1_000_000}}, f.rangeQs)
	require.Equal(t, uint64(10), res.Missing)
	for _, h := range r.heights() {
		require.Greater(t, h, uint64(1000), "a pruned height started")
	}
}

// HeadScan likewise counts its backlog from the floor.
func TestHeadScanStartsAtThePrunedFloor(t *testing.T) {
	f := &fakeChain{head: 1200, watermark: types.WatermarkResult{Found: false, Floor: 1001}}
	r := newRecorder(2000)
	res, _ := runHeadScan(t, newWorkflows(chainConfig(nil)), f, r, t0)
	require.Equal(t, uint64(200), res.Pending, "1001..1200, not 0..1200")
	require.Equal(t, types.ModeNormal, res.Mode)
	require.Len(t, f.missingQs, 1)
	require.Equal(t, chaindata.HeightRange{From: 1001, To: 1200}, f.missingQs[0].Range)
}

// A Watermark answer recorded before the floor existed (Floor 0) keeps the
// start height, as before.
func TestScanFloorZeroIsTheStartHeight(t *testing.T) {
	f := &fakeChain{head: 40, watermark: types.WatermarkResult{Found: false}}
	r := newRecorder(100)
	res, _ := runHeadScan(t, newWorkflows(chainConfig(func(c *config.Chain) { c.StartHeight = 30 })), f, r, t0)
	require.Equal(t, uint64(11), res.Pending, "30..40")
}
