package workflow_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
)

// head 1005, watermark 1000 → 1001..1005 direct, UltraHigh (PriorityKey 1), no scheduler.
func TestHeadScanSmallRangeDirect(t *testing.T) {
	f := &fakeChain{head: 1005, watermark: types.WatermarkResult{Height: 1000, Found: true}}
	r := newRecorder(2000)
	r.keep = true
	res, _ := runHeadScan(t, newWorkflows(chainConfig(nil)), f, r, t0)

	require.Equal(t, types.HeadScanResult{
		Head: 1005, Watermark: 1000, HasWatermark: true, Pending: 5, Mode: types.ModeNormal, Started: 5,
	}, res)
	calls := r.snapshot()
	require.Len(t, calls, 1)
	require.Equal(t, []uint64{1001, 1002, 1003, 1004, 1005}, calls[0].Heights)
	require.Equal(t, types.UltraHigh, calls[0].Level)
	require.Equal(t, 1, calls[0].Level.PriorityKey())
	require.True(t, calls[0].SkipIndexed, "push may have indexed a listed height since")
	require.Equal(t, types.IndexModeDirect, calls[0].Mode)
	require.Equal(t, []types.SchedulerStatus{{}}, f.checks, "CheckScheduler asked once, not running")
	require.Empty(t, f.startAttempts, "no scheduler for 5 blocks")
	require.Equal(t, []types.MissingInput{{ChainID: chainID, Range: chaindata.HeightRange{From: 1001, To: 1005}, Limit: 1000}}, f.missingQs)
	require.Equal(t, []types.HeadScanResult{res}, f.reports, "the result is reported as metrics")
}

// 250 pending, every 10th indexed → 225 started in batches of 100, 100, 25.
func TestHeadScanDirectBatches(t *testing.T) {
	f := &fakeChain{head: 1249, watermark: types.WatermarkResult{Height: 999, Found: true},
		indexed: func(h uint64) bool { return h%10 == 0 }}
	r := newRecorder(2000)
	r.keep = true
	res, _ := runHeadScan(t, newWorkflows(chainConfig(nil)), f, r, t0)

	require.Equal(t, types.ModeNormal, res.Mode)
	require.Equal(t, uint64(250), res.Pending)
	require.Equal(t, 225, res.Started)
	calls := r.snapshot()
	require.Len(t, calls, 3)
	require.Equal(t, []int{100, 100, 25}, []int{calls[0].N, calls[1].N, calls[2].N})
	var want []uint64
	for h := uint64(1000); h <= 1249; h++ {
		if h%10 != 0 {
			want = append(want, h)
		}
	}
	require.Equal(t, want, r.heights())
	for _, c := range calls {
		require.Equal(t, types.UltraHigh, c.Level)
	}
}

// pending 999 → direct; pending 1000 (= catchup_threshold) → scheduler.
func TestHeadScanThresholdBoundary(t *testing.T) {
	wfs := newWorkflows(chainConfig(nil))

	f := &fakeChain{head: 1999, watermark: types.WatermarkResult{Height: 1000, Found: true}}
	r := newRecorder(3000)
	res, _ := runHeadScan(t, wfs, f, r, t0)
	require.Equal(t, types.ModeNormal, res.Mode)
	require.Equal(t, uint64(999), res.Pending)
	require.Equal(t, 999, res.Started)
	require.Empty(t, f.startAttempts)

	f = &fakeChain{head: 2000, watermark: types.WatermarkResult{Height: 1000, Found: true}}
	r = newRecorder(3000)
	res, _ = runHeadScan(t, wfs, f, r, t0)
	require.Equal(t, types.ModeCatchup, res.Mode)
	require.Equal(t, uint64(1000), res.Pending)
	require.True(t, res.SchedulerStarted)
	require.Zero(t, res.Started)
	require.Len(t, f.started, 1)
	require.Equal(t, []chaindata.HeightRange{{From: 1001, To: 2000}}, f.started[0].Remaining)
	require.Empty(t, r.snapshot())
}

// head 5000, watermark 3999 → StartScheduler{Head 5000, Remaining [4000, 5000]} once, no StartIndex.
func TestHeadScanLargeRangeStartsScheduler(t *testing.T) {
	f := &fakeChain{head: 5000, watermark: types.WatermarkResult{Height: 3999, Found: true}}
	r := newRecorder(6000)
	res, _ := runHeadScan(t, newWorkflows(chainConfig(nil)), f, r, t0)

	require.Equal(t, types.HeadScanResult{
		Head: 5000, Watermark: 3999, HasWatermark: true, Pending: 1001, Mode: types.ModeCatchup, SchedulerStarted: true,
	}, res)
	require.Equal(t, []types.SchedulerInput{{
		ChainID: chainID, Head: 5000, Remaining: []chaindata.HeightRange{{From: 4000, To: 5000}},
	}}, f.startAttempts)
	require.Len(t, f.started, 1)
	require.Empty(t, r.snapshot(), "the scheduler owns the backlog: nothing started directly")
	require.Empty(t, f.missingQs)
}

// no watermark → from start_height (100): Remaining [100, 2000].
func TestHeadScanNoWatermarkStartsAtStartHeight(t *testing.T) {
	f := &fakeChain{head: 2000}
	r := newRecorder(3000)
	res, _ := runHeadScan(t, newWorkflows(chainConfig(func(c *config.Chain) { c.StartHeight = 100 })), f, r, t0)
	require.False(t, res.HasWatermark)
	require.Equal(t, uint64(1901), res.Pending)
	require.Len(t, f.started, 1)
	require.Equal(t, []chaindata.HeightRange{{From: 100, To: 2000}}, f.started[0].Remaining)
	require.Equal(t, uint64(2000), f.started[0].Head)
}

// scheduler owns 0..700000, head 700003 → only 700001..700003 started, UltraHigh.
func TestHeadScanSchedulerRunningStartsAboveOwned(t *testing.T) {
	f := &fakeChain{head: 700_003, running: true, owned: chaindata.HeightRange{From: 0, To: 700_000}}
	r := newRecorder(700_010)
	r.keep = true
	res, _ := runHeadScan(t, newWorkflows(chainConfig(nil)), f, r, t0)

	require.Equal(t, types.ModeCatchup, res.Mode)
	require.Equal(t, 3, res.Started)
	require.False(t, res.SchedulerStarted)
	require.Empty(t, f.startAttempts)
	require.Equal(t, []uint64{700_001, 700_002, 700_003}, r.heights())
	for _, c := range r.snapshot() {
		require.Equal(t, types.UltraHigh, c.Level)
	}
	require.Len(t, f.missingQs, 1)
	require.Equal(t, chaindata.HeightRange{From: 700_001, To: 700_003}, f.missingQs[0].Range)
}

// scheduler owns up to 700000, head 699999 → nothing to start, not even a query.
func TestHeadScanSchedulerRunningOwnsAll(t *testing.T) {
	f := &fakeChain{head: 699_999, running: true, owned: chaindata.HeightRange{From: 0, To: 700_000}}
	r := newRecorder(700_010)
	res, _ := runHeadScan(t, newWorkflows(chainConfig(nil)), f, r, t0)
	require.Equal(t, types.ModeCatchup, res.Mode)
	require.Zero(t, res.Started)
	require.Empty(t, r.snapshot())
	require.Empty(t, f.missingQs)
	require.Empty(t, f.startAttempts)
}

// check says not running (stale), start refused (AlreadyRunning) → no error, nothing started.
func TestHeadScanAlreadyRunning(t *testing.T) {
	f := &fakeChain{head: 5000, running: true, owned: chaindata.HeightRange{From: 0, To: 4990}, staleCheck: true}
	r := newRecorder(6000)
	res, _ := runHeadScan(t, newWorkflows(chainConfig(nil)), f, r, t0)
	require.Equal(t, types.ModeCatchup, res.Mode)
	require.False(t, res.SchedulerStarted)
	require.Len(t, f.startAttempts, 1)
	require.Equal(t, 1, f.refused)
	require.Empty(t, f.started)
	require.Empty(t, r.snapshot())
}

// head == watermark → nothing pending: no scheduler check at all.
func TestHeadScanNothingPending(t *testing.T) {
	f := &fakeChain{head: 1000, watermark: types.WatermarkResult{Height: 1000, Found: true}}
	r := newRecorder(2000)
	res, _ := runHeadScan(t, newWorkflows(chainConfig(nil)), f, r, t0)
	require.Equal(t, types.HeadScanResult{Head: 1000, Watermark: 1000, HasWatermark: true, Mode: types.ModeNormal}, res)
	require.Empty(t, f.checks)
	require.Empty(t, r.snapshot())
}
