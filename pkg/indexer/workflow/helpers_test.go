package workflow_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/indexer/activity"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
	indexwf "github.com/tideline-dev/tideline/pkg/indexer/workflow"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// chainID is the one chain every test configures.
const chainID = "test"

// acts gives activity method references for env.OnActivity; never called.
var acts = &activity.Activities{}

// t0 is the workflow start time of every test: fixed, so levels and rate
// windows never depend on the wall clock.
var t0 = time.Date(2025, 10, 14, 0, 0, 0, 0, time.UTC)

// quietLogger drops the test environment's log lines (the default logger
// prints every debug line, which dominates the run time of the simulations).
var quietLogger = log.NewStructuredLogger(slog.New(slog.DiscardHandler))

// chainConfig returns the seed's defaults with tweaks applied: the seed's
// scheduler, one workflow per height (range_size 0) with a window of 2000
// heights, which the seed's scenarios assume. Range tests set their own.
func chainConfig(tweak func(*config.Chain)) config.Chain {
	c := config.DefaultChain()
	c.Scheduler.RangeSize = 0
	c.Scheduler.MaxInFlight = 2000
	if tweak != nil {
		tweak(&c)
	}
	return c
}

// newWorkflows builds the workflow set the worker registers, for chainID.
func newWorkflows(c config.Chain) *indexwf.Workflows {
	return &indexwf.Workflows{Chain: indexwf.NewChainSetup(temporal.NewOptions(chainID, c.Index.ActivityTimeout), c)}
}

// newEnv is a fresh test environment with every workflow registered under
// its worker name, the activities struct registered, and the clock at start.
func newEnv(wfs *indexwf.Workflows, start time.Time) *testsuite.TestWorkflowEnvironment {
	var s testsuite.WorkflowTestSuite
	s.SetLogger(quietLogger)
	env := s.NewTestWorkflowEnvironment()
	env.SetStartTime(start)
	env.RegisterWorkflowWithOptions(wfs.HeadScan, workflow.RegisterOptions{Name: temporal.HeadScanWorkflow})
	env.RegisterWorkflowWithOptions(wfs.GapScan, workflow.RegisterOptions{Name: temporal.GapScanWorkflow})
	env.RegisterWorkflowWithOptions(wfs.Scheduler, workflow.RegisterOptions{Name: temporal.SchedulerWorkflow})
	env.RegisterWorkflowWithOptions(wfs.IndexBlock, workflow.RegisterOptions{Name: temporal.IndexBlockWorkflow})
	env.RegisterWorkflowWithOptions(wfs.IndexRange, workflow.RegisterOptions{Name: temporal.IndexRangeWorkflow})
	env.RegisterActivity(&activity.Activities{})
	return env
}

// ---------------------------------------------------------------------------
// StartIndex recorder

// startCall is one StartIndex local activity as the fake saw it.
type startCall struct {
	At          time.Time // workflow time of the call
	Level       types.PriorityLevel
	Top, Bottom uint64 // first and last height of the call
	N           int
	Range       bool // an IndexRange workflow (StartRange), not a batch of IndexBlocks
	SkipIndexed bool
	Mode        types.IndexMode
	Heights     []uint64 // only with recorder.keep
}

// recorder is the fake of starting IndexBlockWorkflows. It checks, as the
// calls come, what must hold for every call (each height once, optionally
// strictly descending heights and non-increasing levels, optionally each
// height's level by its age), and keeps a compact log of the calls.
// Calls come from local-activity goroutines, hence the mutex.
type recorder struct {
	mu sync.Mutex

	keep       bool // keep every call's heights
	descending bool // heights strictly descending and levels non-increasing across calls
	// ageHead, when set, checks each height's level against
	// types.LevelForAge(ageHead, h, blockTime).
	ageHead   uint64
	ageCheck  bool
	blockTime time.Duration

	// lag, when set, is the in-flight model: a started height counts as
	// indexed lag after its start. maxInFlight is then checked at each start.
	lag         time.Duration
	maxInFlight uint64

	calls   []startCall
	seen    bitset
	total   uint64
	byLevel map[types.PriorityLevel]uint64
	prev    uint64
	prevLvl types.PriorityLevel
	any     bool
	err     error

	// in-flight model state
	inflight     uint64 // heights started within lag of the last call
	inflightFrom int    // first call still in flight
	maxInflight  uint64 // the largest true in-flight seen at a start
	topAt        map[uint64]time.Time
	countCalls   int // CountIndexed calls
	partial      int // CountIndexed answers with a range not fully indexed
}

func newRecorder(maxHeight uint64) *recorder {
	return &recorder{
		seen:      newBitset(maxHeight),
		byLevel:   map[types.PriorityLevel]uint64{},
		topAt:     map[uint64]time.Time{},
		blockTime: config.DefaultChain().BlockTime,
	}
}

func (r *recorder) failf(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf(format, args...)
	}
}

// start records one StartIndex call made at workflow time now.
func (r *recorder) start(now time.Time, in types.StartIndexInput) (types.StartIndexResult, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(in.Heights)
	if n == 0 {
		r.failf("empty StartIndex call at %v", now)
		return types.StartIndexResult{}, nil
	}
	if in.ChainID != chainID {
		r.failf("StartIndex for chain %q", in.ChainID)
	}
	c := startCall{At: now, Level: in.Level, Top: in.Heights[0], Bottom: in.Heights[n-1], N: n, SkipIndexed: in.SkipIndexed, Mode: in.Mode}
	if r.keep {
		c.Heights = slices.Clone(in.Heights)
	}
	r.begin(now, c)
	for _, h := range in.Heights {
		r.height(h, in.Level)
	}
	r.add(now, c)
	return types.StartIndexResult{Started: n}, nil
}

// startRange records one StartRange call made at workflow time now, as
// start does for a batch: every height of the range, newest first.
func (r *recorder) startRange(now time.Time, in types.StartRangeInput) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if in.ChainID != chainID {
		r.failf("StartRange for chain %q", in.ChainID)
	}
	if in.Range.From > in.Range.To {
		r.failf("empty StartRange %v at %v", in.Range, now)
		return nil
	}
	c := startCall{At: now, Level: in.Level, Top: in.Range.To, Bottom: in.Range.From, N: int(in.Range.Len()), Range: true}
	if r.keep {
		c.Heights = in.Range.Descending()
	}
	r.begin(now, c)
	for h := in.Range.To; ; h-- {
		r.height(h, in.Level)
		if h == in.Range.From {
			break
		}
	}
	r.add(now, c)
	return nil
}

// begin checks what holds between calls: time never goes back, levels
// never rise (descending mode).
func (r *recorder) begin(now time.Time, c startCall) {
	if len(r.calls) > 0 && now.Before(r.calls[len(r.calls)-1].At) {
		r.failf("workflow time went backwards: %v after %v", now, r.calls[len(r.calls)-1].At)
	}
	if r.descending && r.any && c.Level > r.prevLvl {
		r.failf("level rose from %v to %v at height %d", r.prevLvl, c.Level, c.Top)
	}
}

// height checks one started height: once, descending, at its age's level.
func (r *recorder) height(h uint64, level types.PriorityLevel) {
	if r.descending && r.any && h >= r.prev {
		r.failf("height %d started after %d: not strictly descending", h, r.prev)
	}
	r.prev, r.any = h, true
	if r.seen.testAndSet(h) {
		r.failf("height %d started twice", h)
	}
	if r.ageCheck {
		if lvl := types.LevelForAge(r.ageHead, h, r.blockTime); lvl != level {
			r.failf("height %d started at %v, its age gives %v", h, level, lvl)
		}
	}
}

// add counts a checked call and runs the in-flight model.
func (r *recorder) add(now time.Time, c startCall) {
	n := c.N
	r.prevLvl = c.Level
	r.total += uint64(n)
	r.byLevel[c.Level] += uint64(n)
	if r.lag > 0 {
		// True in-flight: heights whose start is less than lag ago.
		for r.inflightFrom < len(r.calls) && !now.Before(r.calls[r.inflightFrom].At.Add(r.lag)) {
			r.inflight -= uint64(r.calls[r.inflightFrom].N)
			r.inflightFrom++
		}
		r.inflight += uint64(n)
		r.maxInflight = max(r.maxInflight, r.inflight)
		if r.inflight > r.maxInFlight {
			r.failf("%d heights in flight at %v, above max_in_flight %d", r.inflight, now, r.maxInFlight)
		}
		r.topAt[c.Top] = now
	}
	r.calls = append(r.calls, c)
}

// allIndexed answers CountIndexed with every pending range fully indexed.
func (r *recorder) allIndexed(_ time.Time, in types.CountIndexedInput) ([]uint64, error) {
	r.mu.Lock()
	r.countCalls++
	r.mu.Unlock()
	out := make([]uint64, len(in.Ranges))
	for i, rg := range in.Ranges {
		out[i] = rg.Len()
	}
	return out, nil
}

// lagged answers CountIndexed by the in-flight model: a batch is indexed
// once lag has passed since its start.
func (r *recorder) lagged(now time.Time, in types.CountIndexedInput) ([]uint64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.countCalls++
	out := make([]uint64, len(in.Ranges))
	for i, rg := range in.Ranges {
		at, ok := r.topAt[rg.To]
		if !ok {
			r.failf("CountIndexed asked about %v, which was never started as a batch", rg)
			continue
		}
		if !now.Before(at.Add(r.lag)) {
			out[i] = rg.Len()
		} else {
			r.partial++
		}
	}
	return out, nil
}

func (r *recorder) snapshot() []startCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// heights lists every started height in call order (needs keep).
func (r *recorder) heights() []uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []uint64
	for _, c := range r.calls {
		out = append(out, c.Heights...)
	}
	return out
}

// bitset marks heights; it grows as needed.
type bitset []uint64

func newBitset(maxHeight uint64) bitset { return make(bitset, maxHeight/64+1) }

func (b *bitset) testAndSet(h uint64) bool {
	w := h / 64
	if w >= uint64(len(*b)) {
		*b = append(*b, make([]uint64, w-uint64(len(*b))+1)...)
	}
	m := uint64(1) << (h % 64)
	was := (*b)[w]&m != 0
	(*b)[w] |= m
	return was
}

func (b bitset) has(h uint64) bool {
	w := h / 64
	return w < uint64(len(b)) && b[w]&(1<<(h%64)) != 0
}

// maxInWindow is the largest number of heights started within any window
// (t-w, t] of workflow time, t being a call's time.
func maxInWindow(calls []startCall, w time.Duration) int {
	best, sum, j := 0, 0, 0
	for _, c := range calls {
		sum += c.N
		for !calls[j].At.After(c.At.Add(-w)) {
			sum -= calls[j].N
			j++
		}
		best = max(best, sum)
	}
	return best
}

// minGap is the smallest workflow time between two consecutive calls.
func minGap(calls []startCall) time.Duration {
	g := time.Duration(1<<63 - 1)
	for i := 1; i < len(calls); i++ {
		g = min(g, calls[i].At.Sub(calls[i-1].At))
	}
	return g
}

// ---------------------------------------------------------------------------
// The fake chain, database and Temporal behind the scan activities.

// fakeChain answers the scans' activities. Its Temporal part behaves like
// the real server for the scheduler's fixed workflow ID: one start wins,
// later ones are refused while it runs.
type fakeChain struct {
	mu sync.Mutex

	head      uint64
	watermark types.WatermarkResult
	indexed   func(h uint64) bool     // nil: nothing above the watermark is indexed
	gaps      []chaindata.HeightRange // MissingRanges answer

	running    bool                  // a scheduler runs
	owned      chaindata.HeightRange // … and owns this
	staleCheck bool                  // CheckScheduler reports "not running" whatever runs (the race)

	checks        []types.SchedulerStatus
	startAttempts []types.SchedulerInput
	started       []types.SchedulerInput // the starts Temporal accepted
	refused       int
	missingQs     []types.MissingInput
	rangeQs       []types.MissingInput
	reports       []types.HeadScanResult
}

func (f *fakeChain) headHeight() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.head
}

// mock installs the fake's answers on env.
func (f *fakeChain) mock(env *testsuite.TestWorkflowEnvironment) {
	env.OnActivity(acts.HeadHeight, mock.Anything, mock.Anything).Return(
		func(_ context.Context, id string) (uint64, error) { return f.headHeight(), nil })
	env.OnActivity(acts.Watermark, mock.Anything, mock.Anything).Return(
		func(_ context.Context, id string) (types.WatermarkResult, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			return f.watermark, nil
		})
	env.OnActivity(acts.MissingHeights, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in types.MissingInput) ([]uint64, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.missingQs = append(f.missingQs, in)
			var out []uint64
			for h := in.Range.From; h <= in.Range.To && len(out) < in.Limit; h++ {
				if f.indexed == nil || !f.indexed(h) {
					out = append(out, h)
				}
			}
			return out, nil
		})
	env.OnActivity(acts.MissingRanges, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in types.MissingInput) ([]chaindata.HeightRange, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.rangeQs = append(f.rangeQs, in)
			return slices.Clone(f.gaps), nil
		})
	env.OnActivity(acts.CheckScheduler, mock.Anything, mock.Anything).Return(
		func(_ context.Context, id string) (types.SchedulerStatus, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			st := types.SchedulerStatus{Running: f.running, Owned: f.owned}
			if f.staleCheck {
				st = types.SchedulerStatus{}
			}
			f.checks = append(f.checks, st)
			return st, nil
		})
	env.OnActivity(acts.StartScheduler, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in types.SchedulerInput) (types.StartSchedulerResult, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.startAttempts = append(f.startAttempts, in)
			if f.running {
				f.refused++
				return types.StartSchedulerResult{AlreadyRunning: true}, nil
			}
			f.running, f.owned = true, chaindata.Span(in.Remaining)
			f.started = append(f.started, in)
			return types.StartSchedulerResult{Started: true}, nil
		})
	env.OnActivity(acts.ReportScan, mock.Anything, mock.Anything, mock.Anything).Return(
		func(_ context.Context, id string, res types.HeadScanResult) error {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.reports = append(f.reports, res)
			return nil
		})
}

// mockStarts routes StartIndex and CountIndexed of env to the recorder;
// count nil means every pending batch is indexed.
func mockStarts(env *testsuite.TestWorkflowEnvironment, r *recorder, count func(time.Time, types.CountIndexedInput) ([]uint64, error)) {
	if count == nil {
		count = r.allIndexed
	}
	env.OnActivity(acts.StartIndex, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in types.StartIndexInput) (types.StartIndexResult, error) {
			return r.start(env.Now(), in)
		})
	env.OnActivity(acts.CountIndexed, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in types.CountIndexedInput) ([]uint64, error) {
			return count(env.Now(), in)
		})
}

// mockAgreeingHead answers the scheduler's head check (scheduler_shrink.go)
// with a node whose head is at least every height the scheduler holds:
// nothing to shrink. The scheduler tests that are not about shrinking
// assume that node.
func mockAgreeingHead(env *testsuite.TestWorkflowEnvironment, in types.SchedulerInput) {
	head := in.Head
	if len(in.Remaining) > 0 {
		head = max(head, chaindata.Span(in.Remaining).To)
	}
	if len(in.State.Pending) > 0 {
		head = max(head, chaindata.Span(in.State.Pending).To)
	}
	env.OnActivity(acts.HeadHeight, mock.Anything, mock.Anything).Return(head, nil)
}

// runHeadScan runs one HeadScan in a fresh environment starting at start.
func runHeadScan(t testing.TB, wfs *indexwf.Workflows, f *fakeChain, r *recorder, start time.Time) (types.HeadScanResult, time.Time) {
	t.Helper()
	env := newEnv(wfs, start)
	f.mock(env)
	mockStarts(env, r, nil)
	env.ExecuteWorkflow(temporal.HeadScanWorkflow, types.HeadScanInput{ChainID: chainID})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var res types.HeadScanResult
	require.NoError(t, env.GetWorkflowResult(&res))
	return res, env.Now()
}

// runGapScan runs one GapScan in a fresh environment.
func runGapScan(t testing.TB, wfs *indexwf.Workflows, f *fakeChain, r *recorder) types.GapScanResult {
	t.Helper()
	env := newEnv(wfs, t0)
	f.mock(env)
	mockStarts(env, r, nil)
	env.ExecuteWorkflow(temporal.GapScanWorkflow, types.GapScanInput{ChainID: chainID})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var res types.GapScanResult
	require.NoError(t, env.GetWorkflowResult(&res))
	return res
}

// ---------------------------------------------------------------------------
// Running a scheduler through its ContinueAsNew chain.

// schedRun is one run (one workflow execution) of a scheduler chain.
type schedRun struct {
	Input      types.SchedulerInput
	Began, End time.Time
	Scheduled  uint64 // heights started in this run
}

// schedChain is a whole scheduler chain.
type schedChain struct {
	Runs   []schedRun
	Result types.SchedulerResult
	End    time.Time
}

// schedOpts tunes runScheduler.
type schedOpts struct {
	count   func(time.Time, types.CountIndexedInput) ([]uint64, error) // nil: all indexed
	hook    func(env *testsuite.TestWorkflowEnvironment, run int)      // before each run
	maxRuns int                                                        // 0: 1000
	// headByHook says the hook answers HeadHeight itself; otherwise the
	// node's head is the scheduler's head (nothing to shrink).
	headByHook bool
}

// runScheduler runs the SchedulerWorkflow with in, and on each
// ContinueAsNew a fresh environment with the carried input and the clock
// carried over (a test environment runs one workflow). It checks the
// hand-over at each step: the carried Remaining is what was left minus
// exactly what this run started, all of it below what this run started;
// counters and the owned span carry.
func runScheduler(t testing.TB, wfs *indexwf.Workflows, in types.SchedulerInput, start time.Time, r *recorder, o schedOpts) schedChain {
	t.Helper()
	if o.maxRuns == 0 {
		o.maxRuns = 1000
	}
	dc := converter.GetDefaultDataConverter()
	var out schedChain
	for run := 0; ; run++ {
		require.Less(t, run, o.maxRuns, "scheduler did not finish")
		env := newEnv(wfs, start)
		mockStarts(env, r, o.count)
		if o.hook != nil {
			o.hook(env, run)
		}
		if !o.headByHook {
			mockAgreeingHead(env, in)
		}
		r.mu.Lock()
		before, callsBefore := r.total, len(r.calls)
		r.mu.Unlock()
		env.ExecuteWorkflow(temporal.SchedulerWorkflow, in)
		require.True(t, env.IsWorkflowCompleted())
		r.mu.Lock()
		sr := schedRun{Input: in, Began: start, End: env.Now(), Scheduled: r.total - before}
		lowest := ^uint64(0)
		for _, c := range r.calls[callsBefore:] {
			lowest = min(lowest, c.Bottom)
		}
		r.mu.Unlock()
		out.Runs = append(out.Runs, sr)
		require.False(t, env.Now().Before(start), "workflow time went backwards")

		err := env.GetWorkflowError()
		var can *workflow.ContinueAsNewError
		if !errors.As(err, &can) {
			require.NoError(t, err)
			require.NoError(t, env.GetWorkflowResult(&out.Result))
			out.End = env.Now()
			return out
		}
		require.Equal(t, temporal.SchedulerWorkflow, can.WorkflowType.Name)
		var next types.SchedulerInput
		require.NoError(t, dc.FromPayloads(can.Input, &next))

		require.Equal(t, in.ChainID, next.ChainID)
		require.Equal(t, in.Head, next.Head)
		require.Equal(t, chaindata.TotalLen(in.Remaining)-sr.Scheduled, chaindata.TotalLen(next.Remaining), "run %d: Remaining shrank by other than what was started", run)
		require.NotZero(t, sr.Scheduled, "run %d continued as new without starting anything", run)
		require.NotEmpty(t, next.Remaining)
		require.Less(t, chaindata.Span(next.Remaining).To, lowest, "run %d: carried heights not below what was started", run)
		require.Equal(t, chaindata.Span(in.Remaining).From, chaindata.Span(next.Remaining).From)
		require.Equal(t, in.State.Runs+1, next.State.Runs)
		require.Equal(t, in.State.Scheduled+sr.Scheduled, next.State.Scheduled)
		var done uint64
		for i, b := range next.State.Buckets {
			done += b.Done
			require.LessOrEqual(t, b.Done, b.Total, "bucket %s", b.Name)
			if i < len(in.State.Buckets) {
				require.GreaterOrEqual(t, b.Done, in.State.Buckets[i].Done, "bucket %s Done went down", b.Name)
				require.Equal(t, in.State.Buckets[i].Total, b.Total)
			}
		}
		require.Equal(t, next.State.Scheduled, done, "bucket Done does not add up to Scheduled")
		if in.State.Buckets != nil {
			require.Equal(t, in.State.Owned, next.State.Owned)
		} else {
			require.Equal(t, chaindata.Span(in.Remaining), next.State.Owned)
		}
		in, start = next, env.Now()
	}
}

// bucket finds a level's progress (zero if the level has no bucket).
func bucket(bs []temporal.BucketProgress, l types.PriorityLevel) temporal.BucketProgress {
	for _, b := range bs {
		if b.Level == int(l) {
			return b
		}
	}
	return temporal.BucketProgress{}
}

// seq lists from..to inclusive, in the given direction.
func seq(from, to uint64) []uint64 {
	var out []uint64
	if from <= to {
		for h := from; h <= to; h++ {
			out = append(out, h)
		}
		return out
	}
	for h := from; ; h-- {
		out = append(out, h)
		if h == to {
			return out
		}
	}
}
