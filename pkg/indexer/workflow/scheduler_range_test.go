package workflow_test

// The scheduler with ranges (scheduler.range_size > 0): the seed's
// scenarios again, with IndexRange workflows for the backlog below the
// newest single_heights heights, and a model of the range workers that
// measures whether the window and its poll keep them busy.

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// rangeWorkers models the range queue and the index queue behind the
// scheduler. A range runs on the first of `slots` range slots to be free,
// in start order (ranges are started in priority order), for perHeight
// per height; single heights are indexed singleLag after their start. A
// finished range signals the scheduler (RangeDoneSignal) unless signals
// is off; signals of ranges a run started reach the run that is current
// when they finish, as they do on Temporal.
type rangeWorkers struct {
	mu        sync.Mutex
	slots     []time.Time // when each slot is free
	perHeight time.Duration
	singleLag time.Duration
	signals   bool
	env       *testsuite.TestWorkflowEnvironment // the current run's

	doneAt  map[uint64]time.Time    // by top height of each started unit
	pending []chaindata.HeightRange // ranges not yet signalled
	busy    time.Duration           // range slot time used
	maxWait time.Duration           // longest wait of a started range for a slot
}

func newRangeWorkers(slots int, perHeight time.Duration, signals bool) *rangeWorkers {
	return &rangeWorkers{slots: make([]time.Time, slots), perHeight: perHeight, singleLag: time.Second,
		signals: signals, doneAt: map[uint64]time.Time{}}
}

// started records a unit started at now.
func (w *rangeWorkers) started(now time.Time, rg chaindata.HeightRange, isRange bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !isRange {
		w.doneAt[rg.To] = now.Add(w.singleLag)
		return
	}
	best := 0
	for i, free := range w.slots {
		if free.Before(w.slots[best]) {
			best = i
		}
	}
	begin := now
	if w.slots[best].After(now) {
		begin = w.slots[best]
	}
	w.maxWait = max(w.maxWait, begin.Sub(now))
	took := time.Duration(rg.Len()) * w.perHeight
	done := begin.Add(took)
	w.slots[best] = done
	w.busy += took
	w.doneAt[rg.To] = done
	if w.signals {
		w.pending = append(w.pending, rg)
		w.signalAt(w.env, now, rg, done)
	}
}

func (w *rangeWorkers) signalAt(env *testsuite.TestWorkflowEnvironment, now time.Time, rg chaindata.HeightRange, done time.Time) {
	env.RegisterDelayedCallback(func() {
		w.mu.Lock()
		current := w.env == env
		w.mu.Unlock()
		if current {
			env.SignalWorkflow(temporal.RangeDoneSignal, rg)
		}
	}, max(done.Sub(now), time.Millisecond))
}

// run is the hook for each run: it installs StartRange and re-arms the
// signals of ranges still running at the run's start.
func (w *rangeWorkers) run(r *recorder) func(env *testsuite.TestWorkflowEnvironment, run int) {
	return func(env *testsuite.TestWorkflowEnvironment, _ int) {
		w.mu.Lock()
		w.env = env
		now := env.Now()
		var still []chaindata.HeightRange
		for _, rg := range w.pending {
			if done := w.doneAt[rg.To]; done.After(now) {
				still = append(still, rg)
				w.signalAt(env, now, rg, done)
			}
		}
		w.pending = still
		w.mu.Unlock()
		env.OnActivity(acts.StartRange, mock.Anything, mock.Anything).Return(
			func(_ context.Context, in types.StartRangeInput) error {
				if err := r.startRange(env.Now(), in); err != nil {
					return err
				}
				w.started(env.Now(), in.Range, true)
				return nil
			})
	}
}

// count answers CountIndexed by the model.
func (w *rangeWorkers) count(now time.Time, in types.CountIndexedInput) ([]uint64, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]uint64, len(in.Ranges))
	for i, rg := range in.Ranges {
		if done, ok := w.doneAt[rg.To]; ok && !now.Before(done) {
			out[i] = rg.Len()
		}
	}
	return out, nil
}

// singles wraps the recorder's StartIndex so the model sees single heights.
func (w *rangeWorkers) countWith(r *recorder) func(time.Time, types.CountIndexedInput) ([]uint64, error) {
	return func(now time.Time, in types.CountIndexedInput) ([]uint64, error) {
		r.mu.Lock()
		for _, c := range r.calls {
			if !c.Range {
				w.mu.Lock()
				if _, ok := w.doneAt[c.Top]; !ok {
					w.doneAt[c.Top] = c.At.Add(w.singleLag)
				}
				w.mu.Unlock()
			}
		}
		r.mu.Unlock()
		return w.count(now, in)
	}
}

// The plan in detail, 10000..1 ↓ with 20 s blocks: 64 single heights
// (10000..9937, one batch), then High 9936..5681 in ranges 1000, 1000,
// 1000, 1000, 256; Medium 5680..1361: 4 × 1000 + 320; Low 1360..1: 1000 +
// 360. No range crosses a level boundary, every height once, newest first.
func TestRangeSchedulerPlan(t *testing.T) {
	wfs := newWorkflows(rangeConfig(nil))
	r := orderedRecorder(10_000)
	w := newRangeWorkers(2, time.Millisecond, true)
	var mid temporal.SchedulerProgress
	hook := func(env *testsuite.TestWorkflowEnvironment, run int) {
		w.run(r)(env, run)
		env.RegisterDelayedCallback(func() {
			v, err := env.QueryWorkflow(temporal.SchedulerProgressQuery)
			require.NoError(t, err)
			require.NoError(t, v.Get(&mid))
		}, 2500*time.Millisecond)
	}
	out := runScheduler(t, wfs, schedIn(10_000, chaindata.HeightRange{From: 1, To: 10_000}), t0, r,
		schedOpts{hook: hook, count: w.countWith(r)})
	require.NoError(t, r.err)
	// At 2.5 s the query counts what the recorder saw started by then.
	var ranges, heights uint64
	for _, c := range r.snapshot() {
		if c.At.Sub(t0) <= 2500*time.Millisecond {
			heights += uint64(c.N)
			if c.Range {
				ranges++
			}
		}
	}
	require.Equal(t, uint64(1000), mid.RangeSize)
	require.Positive(t, ranges)
	require.Equal(t, ranges, mid.Ranges)
	require.Equal(t, heights, mid.Scheduled)
	require.Equal(t, 10_000-heights, mid.Remaining)
	type unit struct {
		top, bottom uint64
		level       types.PriorityLevel
		isRange     bool
	}
	var got []unit
	for _, c := range r.snapshot() {
		got = append(got, unit{c.Top, c.Bottom, c.Level, c.Range})
	}
	require.Equal(t, []unit{
		{10_000, 9937, types.High, false},
		{9936, 8937, types.High, true}, {8936, 7937, types.High, true}, {7936, 6937, types.High, true},
		{6936, 5937, types.High, true}, {5936, 5681, types.High, true},
		{5680, 4681, types.Medium, true}, {4680, 3681, types.Medium, true}, {3680, 2681, types.Medium, true},
		{2680, 1681, types.Medium, true}, {1680, 1361, types.Medium, true},
		{1360, 361, types.Low, true}, {360, 1, types.Low, true},
	}, got)
	require.Equal(t, uint64(10_000), r.total)
	require.Len(t, out.Runs, 1)
	require.Equal(t, uint64(10_000), out.Result.Scheduled)
	for _, b := range out.Result.Buckets {
		require.Equal(t, b.Total, b.Done, b.Name)
	}
}

// A scheduler whose first run was recorded before ranges existed
// (GetVersion gives DefaultVersion) keeps one workflow per height, whatever
// range_size says.
func TestRangeSchedulerVersionGuard(t *testing.T) {
	wfs := newWorkflows(rangeConfig(nil))
	r := orderedRecorder(2000)
	hook := func(env *testsuite.TestWorkflowEnvironment, _ int) {
		env.OnGetVersion("index-range", workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
		env.OnActivity(acts.StartRange, mock.Anything, mock.Anything).Return(
			func(_ context.Context, in types.StartRangeInput) error {
				return r.startRange(env.Now(), in)
			}).Maybe()
	}
	runScheduler(t, wfs, schedIn(2000, chaindata.HeightRange{From: 1, To: 2000}), t0, r, schedOpts{hook: hook})
	require.NoError(t, r.err)
	require.Equal(t, uint64(2000), r.total)
	for _, c := range r.snapshot() {
		require.False(t, c.Range, "a range started by a pre-range scheduler")
		require.LessOrEqual(t, c.N, 100)
	}
}

// Scenario 1 with ranges: initial mainnet catch-up, 700,001 heights.
//
// 700000..0 ↓: 64 single heights (one batch), then ranges of ≤ 1000 never
// crossing a level: High 4256 → 5 ranges, Medium 4320 → 5, Low 4320 → 5,
// UltraLow 687041 → 688. Two range slots at 0.5 ms per height (a 1000
// range takes 0.5 s; 4000 heights/s of capacity), window 8000, rate_limit
// 100 starts/s, heights_per_second 3000. CAN every 10000 heights: 71 runs.
// Each run's history stays small: its starts, its window checks and its
// signals, all bounded by the heights it schedules.
func TestLoad700kRanges(t *testing.T) {
	const head = 700_000
	wfs := newWorkflows(rangeConfig(func(c *config.Chain) { c.Scheduler.HeightsPerSecond = 3000 }))
	began := time.Now()

	f := &fakeChain{head: head}
	res, scanEnd := runHeadScan(t, wfs, f, newRecorder(head), t0)
	require.True(t, res.SchedulerStarted)
	in := f.started[0]

	r := orderedRecorder(head)
	w := newRangeWorkers(2, 500*time.Microsecond, true)
	out := runScheduler(t, wfs, in, scanEnd, r, schedOpts{hook: w.run(r), count: w.countWith(r)})
	require.NoError(t, r.err) // each height once, strictly descending, levels non-increasing, each at its age's level

	require.Equal(t, uint64(head+1), r.total)
	for h := uint64(0); h <= head; h++ {
		if !r.seen.has(h) {
			require.Failf(t, "height never started", "%d", h)
		}
	}
	ultraLow := uint64(head+1) - 3*perDay
	require.Equal(t, map[types.PriorityLevel]uint64{
		types.High: perDay, types.Medium: perDay, types.Low: perDay, types.UltraLow: ultraLow,
	}, r.byLevel)

	calls := r.snapshot()
	singles, ranges := 0, 0
	for i, c := range calls {
		if !c.Range {
			singles += c.N
			require.GreaterOrEqual(t, c.Bottom, uint64(head-63), "a single-height batch below the newest 64")
			continue
		}
		ranges++
		require.LessOrEqual(t, c.N, 1000)
		require.Less(t, c.Top, uint64(head-63))
		require.Equal(t, types.LevelForAge(head, c.Top, 20*time.Second), types.LevelForAge(head, c.Bottom, 20*time.Second),
			"range %d [%d, %d] crosses a level boundary", i, c.Bottom, c.Top)
	}
	require.Equal(t, 64, singles)
	require.Equal(t, 5+5+5+688, ranges)

	// Rates: starts/s and heights/s in any one-second window.
	require.LessOrEqual(t, maxStartsInWindow(calls, time.Second), 100)
	// heights_per_second paces after each start (its heights / the rate),
	// so T seconds hold at most 3000·T heights plus one range.
	require.LessOrEqual(t, maxInWindow(calls, time.Second), 3000+1000)
	require.LessOrEqual(t, maxInWindow(calls, 10*time.Second), 30_000+1000)
	elapsed := out.End.Sub(scanEnd)
	require.GreaterOrEqual(t, elapsed.Seconds(), float64(head+1-1000)/3000)

	// Runs: ContinueAsNew by heights; what each run carries stays small.
	require.Equal(t, append(append([]uint64{10_640, 10_320}, repeat(10_000, 67)...), 9041), runSizes(out))
	dc := converter.GetDefaultDataConverter()
	for i, run := range out.Runs {
		require.LessOrEqual(t, run.Scheduled, uint64(10_000+1000), "run %d", i)
		p, err := dc.ToPayload(run.Input)
		require.NoError(t, err)
		require.Less(t, len(p.Data), 4096, "run %d input", i)
		require.LessOrEqual(t, len(run.Input.State.Pending), 9, "run %d: more ranges pending than the window holds", i)
		if i > 0 {
			require.Equal(t, uint64(1000), run.Input.State.RangeSize, "the mode is carried")
		}
	}
	t.Logf("700k with ranges: %d ranges + %d single heights, %d runs, %v of workflow time (%.0f heights/s), slots busy %.0f%%, %v wall",
		ranges, singles, len(out.Runs), elapsed, float64(head+1)/elapsed.Seconds(),
		100*w.busy.Seconds()/(2*elapsed.Seconds()), time.Since(began))
}

// maxStartsInWindow is the largest number of workflow starts within any
// window (t-w, t]: a range is one start, a batch one per height.
func maxStartsInWindow(calls []startCall, w time.Duration) int {
	cs := make([]startCall, len(calls))
	for i, c := range calls {
		cs[i] = c
		if c.Range {
			cs[i].N = 1
		}
	}
	return maxInWindow(cs, w)
}

// The window and its poll measured: 200 ranges of 1000 heights, 1 s each,
// on 4 range slots (4000 heights/s of capacity), behind a window of 8
// ranges (the default 8000 heights) and of 5. With the range-done signal
// the slots never wait for the scheduler; with only the 2 s poll a window
// with little more than the slots runs dry between polls.
func TestRangeWindowKeepsSlotsBusy(t *testing.T) {
	const head = 10_000_000 // all of the backlog UltraLow
	in := schedIn(head, chaindata.HeightRange{From: 1, To: 200_000})
	for _, window := range []int{8000, 5000} {
		wfs := newWorkflows(rangeConfig(func(c *config.Chain) {
			c.Scheduler.ContinueAsNewAfter = 50_000
			c.Scheduler.MaxInFlight = window
		}))
		rate := map[bool]float64{}
		for _, signals := range []bool{true, false} {
			r := orderedRecorder(head)
			w := newRangeWorkers(4, time.Millisecond, signals)
			out := runScheduler(t, wfs, in, t0, r, schedOpts{hook: w.run(r), count: w.countWith(r)})
			require.NoError(t, r.err)
			require.Equal(t, uint64(200_000), r.total)
			elapsed := out.End.Sub(t0)
			rate[signals] = float64(r.total) / elapsed.Seconds()
			t.Logf("window %d, signals %v: %v for 200k heights = %.0f heights/s (capacity 4000), %d runs, %.0f%% slot use",
				window, signals, elapsed, rate[signals], len(out.Runs), 100*w.busy.Seconds()/(4*elapsed.Seconds()))
		}
		require.GreaterOrEqual(t, rate[true], 0.95*4000, "window %d: with signals the slots must stay busy", window)
		require.GreaterOrEqual(t, rate[true], rate[false], "window %d", window)
	}
}
