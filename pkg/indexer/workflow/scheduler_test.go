package workflow_test

import (
	"context"
	"errors"
	"fmt"
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

// schedIn is a first-run scheduler input.
func schedIn(head uint64, rs ...chaindata.HeightRange) types.SchedulerInput {
	return types.SchedulerInput{ChainID: chainID, Head: head, Remaining: rs}
}

// orderedRecorder checks strictly descending heights, non-increasing
// levels and each height's level by its age from head.
func orderedRecorder(head uint64) *recorder {
	r := newRecorder(head + 64)
	r.descending, r.ageCheck, r.ageHead = true, true, head
	return r
}

// 20000..0 ↓ High 4320 | Medium 4320 | Low 4320 | UltraLow 7041; 100/s; one run.
func TestSchedulerBucketOrder(t *testing.T) {
	wfs := newWorkflows(chainConfig(func(c *config.Chain) { c.Scheduler.ContinueAsNewAfter = 1_000_000 }))
	r := orderedRecorder(20_000)
	out := runScheduler(t, wfs, schedIn(20_000, chaindata.HeightRange{From: 0, To: 20_000}), t0, r, schedOpts{})
	require.NoError(t, r.err)

	require.Len(t, out.Runs, 1)
	require.Equal(t, uint64(20_001), out.Result.Scheduled)
	require.Equal(t, 1, out.Result.Runs)
	require.Equal(t, []temporal.BucketProgress{
		{Level: int(types.High), Name: "high", Total: 4320, Done: 4320},
		{Level: int(types.Medium), Name: "medium", Total: 4320, Done: 4320},
		{Level: int(types.Low), Name: "low", Total: 4320, Done: 4320},
		{Level: int(types.UltraLow), Name: "ultra_low", Total: 7041, Done: 7041},
	}, out.Result.Buckets)
	require.Equal(t, map[types.PriorityLevel]uint64{types.High: 4320, types.Medium: 4320, types.Low: 4320, types.UltraLow: 7041}, r.byLevel)

	calls := r.snapshot()
	// 44 batches per 4320-height level (43 × 100 + 20), 71 for 7041.
	require.Len(t, calls, 44+44+44+71)
	for i, c := range calls {
		require.Equal(t, uint64(c.N), c.Top-c.Bottom+1, "call %d: one consecutive run of heights", i)
		require.LessOrEqual(t, c.N, 100)
		require.True(t, c.SkipIndexed, "a catch-up range may hold indexed heights")
		require.Equal(t, types.IndexModeScheduler, c.Mode)
	}
	// The last batch of each level stops at the level boundary.
	require.Equal(t, types.High, calls[43].Level)
	require.Equal(t, uint64(15681), calls[43].Bottom)
	require.Equal(t, 20, calls[43].N)
	require.Equal(t, types.Medium, calls[44].Level)
	require.Equal(t, uint64(15680), calls[44].Top)
	require.Equal(t, types.UltraLow, calls[len(calls)-1].Level)
	require.Equal(t, uint64(0), calls[len(calls)-1].Bottom)
	require.True(t, r.seen.has(0) && r.seen.has(20_000))
}

// {100..199} {500..649} {5000..5049} {19990..20010} ↓, head 20000: the 10 above head count as High.
func TestSchedulerDisjointRanges(t *testing.T) {
	r := orderedRecorder(20_000)
	in := schedIn(20_000,
		chaindata.HeightRange{From: 100, To: 199}, chaindata.HeightRange{From: 500, To: 649},
		chaindata.HeightRange{From: 5000, To: 5049}, chaindata.HeightRange{From: 19_990, To: 20_010})
	out := runScheduler(t, newWorkflows(chainConfig(nil)), in, t0, r, schedOpts{})
	require.NoError(t, r.err)

	require.Equal(t, uint64(321), out.Result.Scheduled)
	require.Equal(t, uint64(21), bucket(out.Result.Buckets, types.High).Total)
	require.Equal(t, uint64(21), bucket(out.Result.Buckets, types.High).Done)
	require.Zero(t, bucket(out.Result.Buckets, types.Medium).Total)
	require.Zero(t, bucket(out.Result.Buckets, types.Low).Total)
	require.Equal(t, uint64(300), bucket(out.Result.Buckets, types.UltraLow).Total)
	require.Equal(t, uint64(300), bucket(out.Result.Buckets, types.UltraLow).Done)
	var tops []uint64
	for _, c := range r.snapshot() {
		require.Equal(t, uint64(c.N), c.Top-c.Bottom+1, "a batch never spans two ranges")
		tops = append(tops, c.Top)
	}
	require.Equal(t, []uint64{20_010, 5049, 649, 549, 199}, tops)
}

// 5000..1 ↓; rate_limit R, batch B: every window of 1 s holds ≤ R starts,
// batches are ≥ B/R apart, also across ContinueAsNew (every 1000), and the
// whole takes heights/R of workflow time.
func TestSchedulerRateLimit(t *testing.T) {
	for _, tc := range []struct {
		rate  float64
		batch int
	}{{100, 100}, {250, 50}, {40, 20}, {1000, 100}} {
		t.Run(fmt.Sprintf("rate=%v/batch=%d", tc.rate, tc.batch), func(t *testing.T) {
			wfs := newWorkflows(chainConfig(func(c *config.Chain) {
				c.Scheduler.RateLimit, c.Scheduler.BatchSize, c.Scheduler.ContinueAsNewAfter = tc.rate, tc.batch, 1000
			}))
			r := orderedRecorder(5000)
			out := runScheduler(t, wfs, schedIn(5000, chaindata.HeightRange{From: 1, To: 5000}), t0, r, schedOpts{})
			require.NoError(t, r.err)
			require.Equal(t, uint64(5000), out.Result.Scheduled)
			require.Len(t, out.Runs, 5)

			calls := r.snapshot()
			interval := time.Duration(float64(tc.batch) / tc.rate * float64(time.Second))
			require.LessOrEqual(t, maxInWindow(calls, time.Second), int(tc.rate))
			require.GreaterOrEqual(t, minGap(calls), interval)
			elapsed := out.End.Sub(t0)
			require.GreaterOrEqual(t, elapsed.Seconds(), 5000/tc.rate)
			// …and no slower than the rate allows: one interval per batch.
			require.Equal(t, time.Duration(len(calls))*interval, elapsed)
		})
	}
}

// 25000..1 ↓, CAN every 10000: run 1 → 10040 (High 4320, Medium 4320, Low 1400),
// run 2 → 10020 (Low 2920, UltraLow 7100), run 3 → 4940.
func TestSchedulerContinueAsNewHandOver(t *testing.T) {
	wfs := newWorkflows(chainConfig(nil))
	in := schedIn(25_000, chaindata.HeightRange{From: 1, To: 25_000})

	// The first run by hand, to look at exactly what it carries.
	r := orderedRecorder(25_000)
	env := newEnv(wfs, t0)
	mockStarts(env, r, nil)
	mockAgreeingHead(env, in)
	env.ExecuteWorkflow(temporal.SchedulerWorkflow, in)
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, r.err)
	var canErr *workflow.ContinueAsNewError
	require.True(t, errors.As(env.GetWorkflowError(), &canErr), "got %v", env.GetWorkflowError())
	require.Equal(t, temporal.SchedulerWorkflow, canErr.WorkflowType.Name)
	var next types.SchedulerInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(canErr.Input, &next))

	require.Equal(t, uint64(10_040), r.total)
	require.Equal(t, chainID, next.ChainID)
	require.Equal(t, uint64(25_000), next.Head)
	require.Equal(t, []chaindata.HeightRange{{From: 1, To: 25_000 - 10_040}}, next.Remaining)
	require.Equal(t, 1, next.State.Runs)
	require.Equal(t, uint64(10_040), next.State.Scheduled)
	require.Equal(t, chaindata.HeightRange{From: 1, To: 25_000}, next.State.Owned)
	require.Equal(t, []temporal.BucketProgress{
		{Level: int(types.High), Name: "high", Total: 4320, Done: 4320},
		{Level: int(types.Medium), Name: "medium", Total: 4320, Done: 4320},
		{Level: int(types.Low), Name: "low", Total: 4320, Done: 1400},
		{Level: int(types.UltraLow), Name: "ultra_low", Total: 25_000 - 12_960, Done: 0},
	}, next.State.Buckets)
	require.Equal(t, chaindata.TotalLen(next.State.Pending), next.State.InFlight)
	require.LessOrEqual(t, next.State.InFlight, uint64(2000))
	// 102 batches, one second apart, and the run waits out the last interval
	// before handing over, so the next run may start at once.
	require.Equal(t, 102*time.Second, env.Now().Sub(t0))

	// The whole chain, through the shared driver's hand-over checks.
	r = orderedRecorder(25_000)
	out := runScheduler(t, wfs, in, t0, r, schedOpts{})
	require.NoError(t, r.err)
	var per []uint64
	for _, run := range out.Runs {
		per = append(per, run.Scheduled)
	}
	require.Equal(t, []uint64{10_040, 10_020, 4940}, per)
	require.Equal(t, 3, out.Result.Runs)
	require.Equal(t, uint64(25_000), out.Result.Scheduled)
	require.Equal(t, uint64(25_000), r.total)
	for _, b := range out.Result.Buckets {
		require.Equal(t, b.Total, b.Done, b.Name)
	}
	require.GreaterOrEqual(t, minGap(r.snapshot()), time.Second, "no burst at a hand-over")
}

// 1000..1 ↓, max_in_flight 300: 3 batches, then "nothing indexed" until
// t+60 s blocks the 4th (polls every 2 s), then "all indexed" releases it.
func TestSchedulerInFlightWindow(t *testing.T) {
	wfs := newWorkflows(chainConfig(func(c *config.Chain) { c.Scheduler.MaxInFlight = 300 }))
	r := orderedRecorder(1000)
	release := t0.Add(60 * time.Second)
	var nothing, all int
	count := func(now time.Time, in types.CountIndexedInput) ([]uint64, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		out := make([]uint64, len(in.Ranges))
		if now.Before(release) {
			nothing++
			return out, nil
		}
		all++
		for i, rg := range in.Ranges {
			out[i] = rg.Len()
		}
		return out, nil
	}
	var mid temporal.SchedulerProgress
	hook := func(env *testsuite.TestWorkflowEnvironment, run int) {
		env.RegisterDelayedCallback(func() {
			v, err := env.QueryWorkflow(temporal.SchedulerProgressQuery)
			require.NoError(t, err)
			require.NoError(t, v.Get(&mid))
		}, 30*time.Second)
	}
	out := runScheduler(t, wfs, schedIn(1000, chaindata.HeightRange{From: 1, To: 1000}), t0, r, schedOpts{count: count, hook: hook})
	require.NoError(t, r.err)
	require.Equal(t, uint64(1000), out.Result.Scheduled)

	calls := r.snapshot()
	require.Len(t, calls, 10)
	require.Equal(t, time.Duration(0), calls[0].At.Sub(t0))
	require.Equal(t, time.Second, calls[1].At.Sub(t0))
	require.Equal(t, 2*time.Second, calls[2].At.Sub(t0))
	// The window is checked right after the third start (t+2 s), before the
	// rate wait: polls at 2, 4, …, 58 s see nothing; the poll at 60 s releases.
	require.Equal(t, 60*time.Second, calls[3].At.Sub(t0))
	require.Equal(t, 29, nothing)
	require.Positive(t, all)
	// Mid-block, the query shows the full window.
	require.Equal(t, uint64(300), mid.InFlight)
	require.Equal(t, uint64(300), mid.Scheduled)
	require.Equal(t, uint64(700), mid.Remaining)
}

// 10000..1 ↓ High 4320 | Medium 4320 | Low 1360; CAN every 5000; progress
// queried at 50.5 s of run 1 and 10.5 s of run 2.
func TestSchedulerProgressQuery(t *testing.T) {
	wfs := newWorkflows(chainConfig(func(c *config.Chain) { c.Scheduler.ContinueAsNewAfter = 5000 }))
	r := orderedRecorder(10_000)
	got := map[int]temporal.SchedulerProgress{}
	hook := func(env *testsuite.TestWorkflowEnvironment, run int) {
		at := 50*time.Second + 500*time.Millisecond
		if run == 1 {
			at = 10*time.Second + 500*time.Millisecond
		}
		env.RegisterDelayedCallback(func() {
			v, err := env.QueryWorkflow(temporal.SchedulerProgressQuery)
			require.NoError(t, err)
			var p temporal.SchedulerProgress
			require.NoError(t, v.Get(&p))
			got[run] = p
		}, at)
	}
	out := runScheduler(t, wfs, schedIn(10_000, chaindata.HeightRange{From: 1, To: 10_000}), t0, r, schedOpts{hook: hook})
	require.NoError(t, r.err)
	require.Len(t, out.Runs, 2)
	require.Len(t, got, 2)

	// Run 1 at 50.5 s: 51 batches (t = 0 … 50): High 44 batches, Medium 7.
	p := got[0]
	require.Equal(t, chainID, p.ChainID)
	require.Equal(t, uint64(10_000), p.Head)
	require.Equal(t, chaindata.HeightRange{From: 1, To: 10_000}, p.Owned)
	require.Equal(t, uint64(5020), p.Scheduled)
	require.Equal(t, uint64(10_000-5020), p.Remaining)
	require.Equal(t, 1, p.Runs)
	require.Equal(t, 50*time.Second+500*time.Millisecond, p.Elapsed)
	require.InDelta(t, 5020/50.5, p.Rate, 1e-9)
	require.Equal(t, []temporal.BucketProgress{
		{Level: int(types.High), Name: "high", Total: 4320, Done: 4320},
		{Level: int(types.Medium), Name: "medium", Total: 4320, Done: 700},
		{Level: int(types.Low), Name: "low", Total: 1360, Done: 0},
	}, p.Buckets)

	// Run 2 at 10.5 s: 11 more Medium batches; counters span runs, rate is this run's.
	p = got[1]
	require.Equal(t, 2, p.Runs)
	require.Equal(t, uint64(5020+1100), p.Scheduled)
	require.Equal(t, uint64(10_000-6120), p.Remaining)
	require.Equal(t, uint64(1800), bucket(p.Buckets, types.Medium).Done)
	require.InDelta(t, 1100/10.5, p.Rate, 1e-9)
	require.Equal(t, chaindata.HeightRange{From: 1, To: 10_000}, p.Owned)
}

// A failed start is retried (local activity retry) with the same heights:
// nothing skipped, nothing twice.
func TestSchedulerRetriesFailedStart(t *testing.T) {
	wfs := newWorkflows(chainConfig(nil))
	r := orderedRecorder(1000)
	// In the SDK's test environment a local activity's retry runs under a
	// context deadline of its schedule time (workflow time) plus
	// schedule_to_close, checked by the wall clock: a start time in the
	// past fails every retry with "deadline exceeded". So this test starts
	// at wall time; it asserts nothing about time.
	env := newEnv(wfs, time.Now())
	fails := 2
	var attempts [][]uint64
	env.OnActivity(acts.StartIndex, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in types.StartIndexInput) (types.StartIndexResult, error) {
			r.mu.Lock()
			attempts = append(attempts, in.Heights)
			f := fails > 0
			fails--
			r.mu.Unlock()
			if f {
				return types.StartIndexResult{}, errors.New("frontend unavailable")
			}
			return r.start(env.Now(), in)
		})
	env.OnActivity(acts.CountIndexed, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in types.CountIndexedInput) ([]uint64, error) {
			return r.allIndexed(env.Now(), in)
		})
	mockAgreeingHead(env, schedIn(1000, chaindata.HeightRange{From: 1, To: 1000}))
	env.ExecuteWorkflow(temporal.SchedulerWorkflow, schedIn(1000, chaindata.HeightRange{From: 1, To: 1000}))
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	require.NoError(t, r.err)
	var res types.SchedulerResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, uint64(1000), res.Scheduled)
	require.Equal(t, uint64(1000), r.total)
	require.Equal(t, seq(1000, 901), attempts[0])
	require.Equal(t, attempts[0], attempts[1])
	require.Equal(t, attempts[0], attempts[2])
	require.Len(t, attempts, 12)
}
