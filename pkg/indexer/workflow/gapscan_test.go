package workflow_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
)

// gapRecorder checks descending order and levels by age from head.
func gapRecorder(head uint64) *recorder {
	r := orderedRecorder(head)
	r.keep = true
	return r
}

// heightsOf lists the heights of ascending ranges, newest first.
func heightsOf(rs []chaindata.HeightRange) []uint64 {
	var out []uint64
	for i := len(rs) - 1; i >= 0; i-- {
		out = append(out, seq(rs[i].To, rs[i].From)...)
	}
	return out
}

// head 20000, gaps: leading 0..9 | 5000..5009 | 10000..10004 | 15000..15004 |
// 15675..15685 (straddles High/Medium at 15681) | trailing 19995..20000 →
// all started directly, newest first, each at its age's level.
func TestGapScanStartsGapsByAge(t *testing.T) {
	gaps := []chaindata.HeightRange{
		{From: 0, To: 9}, {From: 5000, To: 5009}, {From: 10_000, To: 10_004},
		{From: 15_000, To: 15_004}, {From: 15_675, To: 15_685}, {From: 19_995, To: 20_000},
	}
	f := &fakeChain{head: 20_000, gaps: gaps}
	r := gapRecorder(20_000)
	res := runGapScan(t, newWorkflows(chainConfig(nil)), f, r)
	require.NoError(t, r.err) // order and per-height levels

	require.Equal(t, types.GapScanResult{Head: 20_000, Missing: 47, Started: 47}, res)
	require.Equal(t, heightsOf(gaps), r.heights())
	require.Equal(t, map[types.PriorityLevel]uint64{
		types.High:     6 + 5, // 19995..20000, 15681..15685
		types.Medium:   6 + 5, // 15675..15680, 15000..15004
		types.Low:      5,     // 10000..10004
		types.UltraLow: 20,    // 5000..5009, 0..9
	}, r.byLevel)
	// The straddling gap is split at the boundary.
	var levels []types.PriorityLevel
	for _, c := range r.snapshot() {
		levels = append(levels, c.Level)
		require.Equal(t, types.IndexModeGap, c.Mode, "GapScan starts heights as gap")
	}
	require.Equal(t, []types.PriorityLevel{types.High, types.High, types.Medium, types.Medium, types.Low, types.UltraLow, types.UltraLow}, levels)
	require.Empty(t, f.startAttempts)
	require.Equal(t, []types.MissingInput{{ChainID: chainID, Range: chaindata.HeightRange{From: 0, To: 20_000}, Limit: 1_000_000}}, f.rangeQs)
}

// watermark 4999 → search from 5000; a gap of 1200 (≥ threshold) → one
// scheduler with the gap ranges as Remaining, nothing started directly.
func TestGapScanManyMissingStartsScheduler(t *testing.T) {
	gaps := []chaindata.HeightRange{{From: 5000, To: 5999}, {From: 9000, To: 9099}, {From: 19_901, To: 20_000}}
	f := &fakeChain{head: 20_000, watermark: types.WatermarkResult{Height: 4999, Found: true}, gaps: gaps}
	r := gapRecorder(20_000)
	res := runGapScan(t, newWorkflows(chainConfig(nil)), f, r)

	require.Equal(t, types.GapScanResult{Head: 20_000, Missing: 1200, SchedulerStarted: true}, res)
	require.Equal(t, []types.SchedulerInput{{ChainID: chainID, Head: 20_000, Remaining: gaps}}, f.started)
	require.Empty(t, r.snapshot())
	require.Equal(t, chaindata.HeightRange{From: 5000, To: 20_000}, f.rangeQs[0].Range)
}

// scheduler owns 0..9000: gaps 0..9, 5000..5009, 8995..9005, 15000..15004,
// 19995..20000 → only 9001..9005, 15000..15004, 19995..20000 started.
func TestGapScanLeavesOwnedToScheduler(t *testing.T) {
	gaps := []chaindata.HeightRange{{From: 0, To: 9}, {From: 5000, To: 5009}, {From: 8995, To: 9005},
		{From: 15_000, To: 15_004}, {From: 19_995, To: 20_000}}
	f := &fakeChain{head: 20_000, gaps: gaps, running: true, owned: chaindata.HeightRange{From: 0, To: 9000}}
	r := gapRecorder(20_000)
	res := runGapScan(t, newWorkflows(chainConfig(nil)), f, r)
	require.NoError(t, r.err)

	want := []chaindata.HeightRange{{From: 9001, To: 9005}, {From: 15_000, To: 15_004}, {From: 19_995, To: 20_000}}
	require.Equal(t, heightsOf(want), r.heights())
	require.Equal(t, types.GapScanResult{Head: 20_000, Missing: 16, Started: 16}, res)
	for h := uint64(0); h <= 9000; h++ {
		if r.seen.has(h) {
			t.Fatalf("height %d is the scheduler's, yet GapScan started it", h)
		}
	}
	require.Empty(t, f.startAttempts)
}

// scheduler owns 0..5000; 1500 missing above it (≥ threshold) → no second
// scheduler; the newest 1000 started directly (19001..20000, High).
func TestGapScanSchedulerRunningManyMissing(t *testing.T) {
	gaps := []chaindata.HeightRange{{From: 100, To: 199}, {From: 8000, To: 8499}, {From: 19_001, To: 20_000}}
	f := &fakeChain{head: 20_000, gaps: gaps, running: true, owned: chaindata.HeightRange{From: 0, To: 5000}}
	r := gapRecorder(20_000)
	res := runGapScan(t, newWorkflows(chainConfig(nil)), f, r)
	require.NoError(t, r.err)

	require.Equal(t, uint64(1500), res.Missing)
	require.Equal(t, 1000, res.Started)
	require.False(t, res.SchedulerStarted)
	require.Empty(t, f.startAttempts)
	require.Equal(t, seq(20_000, 19_001), r.heights())
	require.Equal(t, map[types.PriorityLevel]uint64{types.High: 1000}, r.byLevel)
}

// …and when the newest 1000 cross a gap boundary: 19501..20000 and 8000..8499.
func TestGapScanNewestAcrossRanges(t *testing.T) {
	gaps := []chaindata.HeightRange{{From: 8000, To: 8999}, {From: 19_501, To: 20_000}}
	f := &fakeChain{head: 20_000, gaps: gaps, running: true, owned: chaindata.HeightRange{From: 0, To: 5000}}
	r := gapRecorder(20_000)
	res := runGapScan(t, newWorkflows(chainConfig(nil)), f, r)
	require.NoError(t, r.err)
	require.Equal(t, 1000, res.Started)
	require.Equal(t, append(seq(20_000, 19_501), seq(8999, 8500)...), r.heights())
}

// Every gap inside the running scheduler's range → nothing at all.
func TestGapScanAllOwned(t *testing.T) {
	f := &fakeChain{head: 20_000, gaps: []chaindata.HeightRange{{From: 10, To: 20}, {From: 300, To: 400}},
		running: true, owned: chaindata.HeightRange{From: 0, To: 20_000}}
	r := gapRecorder(20_000)
	res := runGapScan(t, newWorkflows(chainConfig(nil)), f, r)
	require.Equal(t, types.GapScanResult{Head: 20_000}, res)
	require.Empty(t, r.snapshot())
	require.Empty(t, f.startAttempts)
}

// watermark at head → no search, no check.
func TestGapScanNothingAboveWatermark(t *testing.T) {
	f := &fakeChain{head: 500, watermark: types.WatermarkResult{Height: 500, Found: true}}
	r := gapRecorder(500)
	res := runGapScan(t, newWorkflows(chainConfig(nil)), f, r)
	require.Equal(t, types.GapScanResult{Head: 500}, res)
	require.Empty(t, f.rangeQs)
	require.Empty(t, f.checks)
}
