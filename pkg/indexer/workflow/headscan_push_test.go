package workflow_test

import (
	"context"
	"math"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// runPushHeadScan runs one HeadScan whose PushStatus local activity
// answers ps; oldHistory replays the run as recorded before PushStatus
// existed (GetVersion answers DefaultVersion). It returns the result, the
// started heights and how many times PushStatus was asked.
func runPushHeadScan(t *testing.T, f *fakeChain, ps types.PushStatus, oldHistory bool) (types.HeadScanResult, []uint64, int32) {
	t.Helper()
	r := newRecorder(2000)
	r.keep = true
	env := newEnv(newWorkflows(chainConfig(nil)), t0)
	f.mock(env)
	mockStarts(env, r, nil)
	var asked atomic.Int32
	env.OnActivity(acts.PushStatus, mock.Anything, chainID).Return(
		func(context.Context, string) (types.PushStatus, error) {
			asked.Add(1)
			return ps, nil
		})
	if oldHistory {
		env.OnGetVersion("push-status", workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	}
	env.ExecuteWorkflow(temporal.HeadScanWorkflow, types.HeadScanInput{ChainID: chainID})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var res types.HeadScanResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.NoError(t, r.err)
	for _, c := range r.snapshot() {
		require.Equal(t, types.UltraHigh, c.Level)
	}
	return res, r.heights(), asked.Load()
}

// pushChain: watermark 1000, head 1010; push delivered up to 1005 but
// failed to write 1003, so the missing heights are 1003 and 1006..1010.
//
//	1001 … 1002 1003 1004 1005 | 1006 1007 | 1008 1009 1010
//	   *      *   -    *    *  |   -    -  |   -    -    -
//	          (* indexed, - missing; push Latest = 1005)
func pushChain() *fakeChain {
	return &fakeChain{head: 1010, watermark: types.WatermarkResult{Height: 1000, Found: true},
		indexed: func(h uint64) bool { return h <= 1005 && h != 1003 }}
}

// Healthy push, threshold 2: exactly (1005, 1007] is left to push; 1003
// (passed by push, not written) and 1008..1010 (more than 2 ahead of push)
// are started.
func TestHeadScanPushLeavesThresholdWindow(t *testing.T) {
	res, started, asked := runPushHeadScan(t, pushChain(),
		types.PushStatus{Enabled: true, Healthy: true, Latest: 1005, LagThreshold: 2}, false)
	require.Equal(t, []uint64{1003, 1008, 1009, 1010}, started)
	require.Equal(t, 4, res.Started)
	require.Equal(t, 2, res.LeftToPush)
	require.Equal(t, int32(1), asked)
}

// Threshold 0 leaves nothing to push: every missing height is started
// (push starts new heads too; Temporal runs one workflow per height).
func TestHeadScanPushThresholdZeroSchedulesAll(t *testing.T) {
	res, started, _ := runPushHeadScan(t, pushChain(),
		types.PushStatus{Enabled: true, Healthy: true, Latest: 1005, LagThreshold: 0}, false)
	require.Equal(t, []uint64{1003, 1006, 1007, 1008, 1009, 1010}, started)
	require.Zero(t, res.LeftToPush)
}

// A stalled or disconnected push leaves nothing: pull takes every height,
// whatever the threshold.
func TestHeadScanPushUnhealthySchedulesAll(t *testing.T) {
	res, started, _ := runPushHeadScan(t, pushChain(),
		types.PushStatus{Enabled: true, Healthy: false, Latest: 1005, LagThreshold: math.MaxUint64}, false)
	require.Equal(t, []uint64{1003, 1006, 1007, 1008, 1009, 1010}, started)
	require.Zero(t, res.LeftToPush)
}

// A huge threshold is push-only while push is healthy: only heights at or
// below Latest that are missing (push passed them without writing) are
// started. MaxUint64 also checks that Latest + threshold saturates.
func TestHeadScanPushOnlySchedulesPassedHeights(t *testing.T) {
	for _, threshold := range []uint64{1 << 40, math.MaxUint64} {
		res, started, _ := runPushHeadScan(t, pushChain(),
			types.PushStatus{Enabled: true, Healthy: true, Latest: 1005, LagThreshold: threshold}, false)
		require.Equal(t, []uint64{1003}, started, "threshold %d", threshold)
		require.Equal(t, 5, res.LeftToPush)
	}
}

// Push behind the watermark (just connected, or slow): the window starts
// at Latest, so only the heights within threshold of it are left.
func TestHeadScanPushFarBehind(t *testing.T) {
	f := &fakeChain{head: 1010, watermark: types.WatermarkResult{Height: 1000, Found: true}}
	_, started, _ := runPushHeadScan(t, f,
		types.PushStatus{Enabled: true, Healthy: true, Latest: 990, LagThreshold: 2}, false)
	require.Equal(t, seq(1001, 1010), started)
}

// No push source in this process: as before.
func TestHeadScanPushDisabledSchedulesAll(t *testing.T) {
	res, started, asked := runPushHeadScan(t, pushChain(), types.PushStatus{}, false)
	require.Equal(t, []uint64{1003, 1006, 1007, 1008, 1009, 1010}, started)
	require.Zero(t, res.LeftToPush)
	require.Equal(t, int32(1), asked)
}

// The live heights above a running scheduler are filtered the same way.
func TestHeadScanPushAboveRunningScheduler(t *testing.T) {
	f := &fakeChain{head: 700_010, running: true, owned: chaindata.HeightRange{From: 0, To: 700_000}}
	res, started, _ := runPushHeadScan(t, f,
		types.PushStatus{Enabled: true, Healthy: true, Latest: 700_006, LagThreshold: 2}, false)
	require.Equal(t, types.ModeCatchup, res.Mode)
	require.Equal(t, []uint64{700_001, 700_002, 700_003, 700_004, 700_005, 700_006, 700_009, 700_010}, started)
	require.Equal(t, 2, res.LeftToPush)
}

// Nothing missing: PushStatus is not asked (no command added).
func TestHeadScanPushNotAskedWhenNothingMissing(t *testing.T) {
	f := &fakeChain{head: 1010, watermark: types.WatermarkResult{Height: 1000, Found: true},
		indexed: func(uint64) bool { return true }}
	res, started, asked := runPushHeadScan(t, f,
		types.PushStatus{Enabled: true, Healthy: true, Latest: 1005, LagThreshold: 2}, false)
	require.Empty(t, started)
	require.Zero(t, res.Started)
	require.Zero(t, asked)
}

// A run recorded before the change (no "push-status" marker) replays
// without the PushStatus local activity and starts every missing height.
func TestHeadScanPushVersionGuard(t *testing.T) {
	res, started, asked := runPushHeadScan(t, pushChain(),
		types.PushStatus{Enabled: true, Healthy: true, Latest: 1005, LagThreshold: 2}, true)
	require.Equal(t, []uint64{1003, 1006, 1007, 1008, 1009, 1010}, started)
	require.Zero(t, res.LeftToPush)
	require.Zero(t, asked, "old histories have no PushStatus marker")
}

// runPushGapScan is runPushHeadScan for GapScan.
func runPushGapScan(t *testing.T, f *fakeChain, ps types.PushStatus, oldHistory bool) (types.GapScanResult, []uint64) {
	t.Helper()
	r := newRecorder(2000)
	r.keep = true
	env := newEnv(newWorkflows(chainConfig(nil)), t0)
	f.mock(env)
	mockStarts(env, r, nil)
	env.OnActivity(acts.PushStatus, mock.Anything, chainID).Return(ps, nil)
	if oldHistory {
		env.OnGetVersion("push-status", workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	}
	env.ExecuteWorkflow(temporal.GapScanWorkflow, types.GapScanInput{ChainID: chainID})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var res types.GapScanResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.NoError(t, r.err)
	started := r.heights()
	slices.Sort(started)
	return res, started
}

// GapScan leaves the same window to push: the heights just above push's
// last one are not gaps yet. Without push, or on an old history, it starts
// them all as before.
func TestGapScanLeavesPushWindow(t *testing.T) {
	gaps := func() *fakeChain {
		f := pushChain()
		f.gaps = []chaindata.HeightRange{{From: 1003, To: 1003}, {From: 1006, To: 1010}}
		return f
	}
	healthy := types.PushStatus{Enabled: true, Healthy: true, Latest: 1005, LagThreshold: 2}

	res, started := runPushGapScan(t, gaps(), healthy, false)
	require.Equal(t, []uint64{1003, 1008, 1009, 1010}, started)
	require.Equal(t, uint64(4), res.Missing)

	_, started = runPushGapScan(t, gaps(), types.PushStatus{Enabled: true, Latest: 1005, LagThreshold: 2}, false)
	require.Equal(t, []uint64{1003, 1006, 1007, 1008, 1009, 1010}, started, "unhealthy push: all")

	_, started = runPushGapScan(t, gaps(), healthy, true)
	require.Equal(t, []uint64{1003, 1006, 1007, 1008, 1009, 1010}, started, "old history: all")
}
