package workflow_test

// Load simulations of the seed's five scenarios, at full scale, in the SDK's
// test environment: workflow time only, every activity a fake. A scheduler's
// ContinueAsNew chain runs as one fresh environment per run, the carried
// input decoded from the ContinueAsNewError and the clock carried over.

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// perDay is the number of 20 s blocks in 24 h: the size of the High,
// Medium and Low buckets when the backlog is deep enough.
const perDay = uint64(24 * time.Hour / (20 * time.Second))

// runSizes lists the heights each run of a chain started.
func runSizes(c schedChain) []uint64 {
	var out []uint64
	for _, r := range c.Runs {
		out = append(out, r.Scheduled)
	}
	return out
}

// repeat returns n copies of v.
func repeat(v uint64, n int) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// Scenario 1: initial mainnet catch-up.
//
// HeadScan: head 700000, no watermark (start_height 0) → StartScheduler{[0, 700000]}.
// Scheduler: 700000..0 ↓ High 4320 | Medium 4320 | Low 4320 | UltraLow 687041;
// 100 per batch, 100/s; CAN once a run has started ≥ 10000.
//
// A batch never crosses a level boundary, so each 4320-height level ends in
// a batch of 20 and a run can overshoot 10000: run 1 = 4320 + 4320 + 1400 =
// 10040, run 2 = 2920 (rest of Low) + 7100 = 10020, runs 3–69 = 10000 each,
// run 70 = the last 9941. 700,001 heights therefore take 70 runs (69
// ContinueAsNew), not 71; 7003 batches (44 + 44 + 44 + 6871) take exactly
// 7003 s of workflow time, ≥ 700001/100 s.
func TestLoad700kInitialCatchUp(t *testing.T) {
	const head = 700_000
	wfs := newWorkflows(chainConfig(nil))
	began := time.Now()

	f := &fakeChain{head: head}
	hr := newRecorder(head)
	res, scanEnd := runHeadScan(t, wfs, f, hr, t0)
	require.Equal(t, types.ModeCatchup, res.Mode)
	require.True(t, res.SchedulerStarted)
	require.Equal(t, uint64(head+1), res.Pending)
	require.Empty(t, hr.snapshot(), "HeadScan starts nothing itself")
	require.Len(t, f.started, 1)
	in := f.started[0]
	require.Equal(t, types.SchedulerInput{ChainID: chainID, Head: head, Remaining: []chaindata.HeightRange{{From: 0, To: head}}}, in)

	r := orderedRecorder(head)
	out := runScheduler(t, wfs, in, scanEnd, r, schedOpts{})
	wall := time.Since(began)
	require.NoError(t, r.err) // each height once, strictly descending, levels non-increasing, each at its age's level

	// Every height 0..700000 exactly once.
	require.Equal(t, uint64(head+1), r.total)
	for h := uint64(0); h <= head; h++ {
		if !r.seen.has(h) {
			require.Failf(t, "height never started", "%d", h)
		}
	}
	// Buckets by the arithmetic.
	ultraLow := uint64(head+1) - 3*perDay
	require.Equal(t, map[types.PriorityLevel]uint64{
		types.High: perDay, types.Medium: perDay, types.Low: perDay, types.UltraLow: ultraLow,
	}, r.byLevel)
	require.Equal(t, []temporal.BucketProgress{
		{Level: int(types.High), Name: "high", Total: perDay, Done: perDay},
		{Level: int(types.Medium), Name: "medium", Total: perDay, Done: perDay},
		{Level: int(types.Low), Name: "low", Total: perDay, Done: perDay},
		{Level: int(types.UltraLow), Name: "ultra_low", Total: ultraLow, Done: ultraLow},
	}, out.Result.Buckets)

	// Runs.
	require.Len(t, out.Runs, 70)
	require.Equal(t, 70, out.Result.Runs)
	require.Equal(t, uint64(head+1), out.Result.Scheduled)
	want := append([]uint64{10_040, 10_020}, repeat(10_000, 67)...)
	want = append(want, 9941)
	require.Equal(t, want, runSizes(out))

	// Rate, in workflow time.
	calls := r.snapshot()
	require.Len(t, calls, 7003)
	require.LessOrEqual(t, maxInWindow(calls, time.Second), 100, "more than rate_limit starts in one second")
	require.GreaterOrEqual(t, minGap(calls), time.Second)
	elapsed := out.End.Sub(scanEnd)
	require.GreaterOrEqual(t, elapsed.Seconds(), float64(head+1)/100)
	require.Equal(t, 7003*time.Second, elapsed)
	require.False(t, calls[0].At.Before(scanEnd))
	// The order of buckets: the first 44 batches High, then Medium, Low, UltraLow.
	require.Equal(t, types.High, calls[43].Level)
	require.Equal(t, types.Medium, calls[44].Level)
	require.Equal(t, types.Low, calls[88].Level)
	require.Equal(t, types.UltraLow, calls[132].Level)
	t.Logf("700k simulation: %d heights, %d runs, %d batches, %v of workflow time, %v wall",
		r.total, len(out.Runs), len(calls), elapsed, wall)
}

// Scenario 2: HeadScan race. Two HeadScans 10 s apart share one fake
// Temporal: #1 (head 700000) starts the scheduler; #2 (head 700001) sees it
// running and starts only 700001 → 1 scheduler. Variant: #2's check is stale
// (not running), its start is refused (AlreadyRunning) → still 1.
func TestLoadHeadScanRace(t *testing.T) {
	wfs := newWorkflows(chainConfig(nil))
	for _, stale := range []bool{false, true} {
		name := "check sees running"
		if stale {
			name = "stale check, start refused"
		}
		t.Run(name, func(t *testing.T) {
			f := &fakeChain{head: 700_000}
			r := newRecorder(700_010)
			r.keep = true
			res1, end1 := runHeadScan(t, wfs, f, r, t0)
			require.True(t, res1.SchedulerStarted)

			f.mu.Lock()
			f.head = 700_001
			f.staleCheck = stale
			f.mu.Unlock()
			start2 := end1.Add(10 * time.Second)
			res2, _ := runHeadScan(t, wfs, f, r, start2)

			require.Len(t, f.started, 1, "exactly one scheduler")
			require.Len(t, f.checks, 2)
			require.False(t, f.checks[0].Running)
			require.False(t, res2.SchedulerStarted)
			require.Equal(t, types.ModeCatchup, res2.Mode)
			if !stale {
				require.True(t, f.checks[1].Running, "second HeadScan sees the scheduler")
				require.Equal(t, chaindata.HeightRange{From: 0, To: 700_000}, f.checks[1].Owned)
				require.Len(t, f.startAttempts, 1, "no second start attempted")
				require.Equal(t, []uint64{700_001}, r.heights(), "only the new block, above the scheduler's range")
				c := r.snapshot()[0]
				require.Equal(t, types.UltraHigh, c.Level)
				require.False(t, c.At.Before(start2))
			} else {
				require.Len(t, f.startAttempts, 2)
				require.Equal(t, 1, f.refused)
				require.Empty(t, r.heights())
			}
		})
	}
}

// Scenario 3: normal operation. 6 HeadScans every 10 s, head 1005 then one
// block every 20 s; the fake indexes what is started. Each height once, all
// UltraHigh (Temporal PriorityKey 1), no scheduler, each scan < 1 s.
func TestLoadNormalOperation(t *testing.T) {
	wfs := newWorkflows(chainConfig(nil))
	opts := temporal.NewOptions(chainID, config.DefaultChain().Index.ActivityTimeout)
	f := &fakeChain{watermark: types.WatermarkResult{Height: 1000, Found: true}}
	r := newRecorder(2000)
	r.keep = true
	at := t0
	var results []types.HeadScanResult
	for i := range 6 {
		f.mu.Lock()
		f.head = 1005 + uint64(i/2) // a block every 20 s
		f.mu.Unlock()
		res, end := runHeadScan(t, wfs, f, r, at)
		require.Less(t, end.Sub(at), time.Second)
		results = append(results, res)
		// The started heights get indexed; the watermark follows.
		f.mu.Lock()
		r.mu.Lock()
		for r.seen.has(f.watermark.Height + 1) {
			f.watermark.Height++
		}
		r.mu.Unlock()
		f.mu.Unlock()
		at = at.Add(10 * time.Second)
	}
	require.Equal(t, 5, results[0].Started)
	require.Equal(t, []int{5, 0, 1, 0, 1, 0}, []int{results[0].Started, results[1].Started, results[2].Started,
		results[3].Started, results[4].Started, results[5].Started})
	require.Equal(t, seq(1001, 1007), r.heights())
	for _, res := range results {
		require.Equal(t, types.ModeNormal, res.Mode)
	}
	for _, c := range r.snapshot() {
		require.Equal(t, types.UltraHigh, c.Level)
		require.Equal(t, 1, c.Level.PriorityKey())
		for _, h := range c.Heights {
			require.Equal(t, 1, opts.IndexBlockStart(h, c.Level.PriorityKey(), string(c.Mode)).Priority.PriorityKey)
			require.Equal(t, types.IndexModeDirect, c.Mode, "HeadScan starts heights as direct")
		}
	}
	require.Empty(t, f.startAttempts, "no scheduler in normal operation")
}

// Scenario 4: mixed distribution. head 100000, watermark 90000 →
// 100000..90001 ↓ High 4320 | Medium 4320 | Low 10000−8640 = 1360 | UltraLow 0;
// 102 batches (44 + 44 + 14), one run (exactly 10000 ≤ continue_as_new_after).
func TestLoadMixedDistribution(t *testing.T) {
	const head, watermark = 100_000, 90_000
	wfs := newWorkflows(chainConfig(nil))
	f := &fakeChain{head: head, watermark: types.WatermarkResult{Height: watermark, Found: true}}
	res, scanEnd := runHeadScan(t, wfs, f, newRecorder(head), t0)
	require.True(t, res.SchedulerStarted)
	require.Len(t, f.started, 1)
	in := f.started[0]
	require.Equal(t, []chaindata.HeightRange{{From: watermark + 1, To: head}}, in.Remaining)

	backlog := uint64(head - watermark)
	wantHigh := min(backlog, perDay)
	wantMedium := min(backlog-wantHigh, perDay)
	wantLow := min(backlog-wantHigh-wantMedium, perDay)
	wantUltraLow := backlog - wantHigh - wantMedium - wantLow
	require.Equal(t, []uint64{4320, 4320, 1360, 0}, []uint64{wantHigh, wantMedium, wantLow, wantUltraLow})

	var early temporal.SchedulerProgress
	hook := func(env *testsuite.TestWorkflowEnvironment, _ int) {
		env.RegisterDelayedCallback(func() {
			v, err := env.QueryWorkflow(temporal.SchedulerProgressQuery)
			require.NoError(t, err)
			require.NoError(t, v.Get(&early))
		}, 1500*time.Millisecond)
	}
	r := orderedRecorder(head)
	out := runScheduler(t, wfs, in, scanEnd, r, schedOpts{hook: hook})
	require.NoError(t, r.err)

	// Totals are known from the start; 2 batches done at 1.5 s.
	require.Equal(t, wantHigh, bucket(early.Buckets, types.High).Total)
	require.Equal(t, wantMedium, bucket(early.Buckets, types.Medium).Total)
	require.Equal(t, wantLow, bucket(early.Buckets, types.Low).Total)
	require.Equal(t, wantUltraLow, bucket(early.Buckets, types.UltraLow).Total)
	require.Equal(t, uint64(200), bucket(early.Buckets, types.High).Done)
	require.Equal(t, chaindata.HeightRange{From: watermark + 1, To: head}, early.Owned)

	require.Len(t, out.Runs, 1)
	require.Equal(t, backlog, out.Result.Scheduled)
	for _, l := range types.Levels {
		b := bucket(out.Result.Buckets, l)
		require.Equal(t, b.Total, b.Done, l.String())
	}
	require.Equal(t, map[types.PriorityLevel]uint64{types.High: wantHigh, types.Medium: wantMedium, types.Low: wantLow}, r.byLevel)
	calls := r.snapshot()
	require.Len(t, calls, 44+44+14)
	// High first, UltraLow (none) last: levels by call index.
	for i, c := range calls {
		want := types.Low
		switch {
		case i < 44:
			want = types.High
		case i < 88:
			want = types.Medium
		}
		require.Equal(t, want, c.Level, "call %d", i)
	}
	require.Equal(t, uint64(head), calls[0].Top)
	require.Equal(t, uint64(watermark+1), calls[len(calls)-1].Bottom)
}

// Scenario 5: ContinueAsNew chain. head 50000, watermark 0 →
// 50000..1 ↓ High 4320 | Medium 4320 | Low 4320 | UltraLow 37040; 100/s;
// CAN every 10k → 5 runs (10040, 10020, 10000, 10000, 9940). Indexing lags
// 30 s behind each start, so the 2000-height in-flight window fills and
// throttles (≈ 2000 per 30 s instead of 100/s), and its state crosses the
// hand-overs.
func TestLoad50kContinueAsNewChain(t *testing.T) {
	const head = 50_000
	wfs := newWorkflows(chainConfig(nil))
	began := time.Now()
	f := &fakeChain{head: head, watermark: types.WatermarkResult{Height: 0, Found: true}}
	res, scanEnd := runHeadScan(t, wfs, f, newRecorder(head), t0)
	require.True(t, res.SchedulerStarted)
	in := f.started[0]
	require.Equal(t, []chaindata.HeightRange{{From: 1, To: head}}, in.Remaining)

	r := orderedRecorder(head)
	r.lag, r.maxInFlight = 30*time.Second, 2000
	out := runScheduler(t, wfs, in, scanEnd, r, schedOpts{count: r.lagged})
	require.NoError(t, r.err) // includes: true in-flight never above 2000

	require.Equal(t, []uint64{10_040, 10_020, 10_000, 10_000, 9940}, runSizes(out))
	require.Equal(t, 5, out.Result.Runs)
	require.Equal(t, uint64(head), r.total)
	for h := uint64(1); h <= head; h++ {
		if !r.seen.has(h) {
			require.Failf(t, "height never started", "%d", h)
		}
	}
	require.False(t, r.seen.has(0), "height 0 is below the watermark")
	require.Equal(t, map[types.PriorityLevel]uint64{
		types.High: perDay, types.Medium: perDay, types.Low: perDay, types.UltraLow: head - 3*perDay,
	}, r.byLevel)

	// The window was full and blocked, and its state crossed every hand-over.
	require.Equal(t, uint64(2000), r.maxInflight)
	require.Positive(t, r.partial, "CountIndexed never reported an unfinished batch")
	for i, run := range out.Runs[1:] {
		require.NotEmpty(t, run.Input.State.Pending, "run %d got no pending batches", i+2)
		require.Equal(t, chaindata.TotalLen(run.Input.State.Pending), run.Input.State.InFlight)
		require.LessOrEqual(t, run.Input.State.InFlight, uint64(2000))
	}
	calls := r.snapshot()
	require.LessOrEqual(t, maxInWindow(calls, time.Second), 100)
	require.GreaterOrEqual(t, minGap(calls), time.Second)
	elapsed := out.End.Sub(scanEnd)
	// 100/s alone would take 500 s; the window holds it to ~2000 per 30 s.
	// The last run then drains: it finishes only once its last batches are
	// indexed, 30 s after they were started.
	require.Greater(t, elapsed, 700*time.Second)
	require.Less(t, elapsed, 800*time.Second+30*time.Second+2*time.Second)
	require.GreaterOrEqual(t, out.End.Sub(calls[len(calls)-1].At), 30*time.Second, "finished before its last batch was indexed")
	t.Logf("50k simulation: %d runs, %d batches, %d CountIndexed (%d unfinished ranges seen), %v workflow time, %v wall",
		len(out.Runs), len(calls), r.countCalls, r.partial, elapsed, time.Since(began))
}
