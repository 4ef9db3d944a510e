package workflow

import (
	"math"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// drainChange versions the wait for in-flight heights added at the end of a
// scheduler, so that runs recorded before it still replay.
const drainChange = "scheduler-drain"

// indexRangeChange versions range indexing: a scheduler whose first run was
// recorded before it schedules one workflow per height for its whole life.
const indexRangeChange = "index-range"

// The Scheduler's activities (files in pkg/indexer/activity), retried
// until they succeed (untilDone, startUnit): StartIndex (start.go) per
// batch of single heights and StartRange (start.go) per range, regular
// activities on the admin queue (local before scheduler_starts.go);
// CountIndexed (gaps.go) for the in-flight window and HeadHeight for the
// head check, local.

// Scheduler catches a chain up over a large backlog. It walks its ranges
// from the newest height down, which serves the seed's buckets in order
// (High, then Medium, Low, UltraLow; newest first within each), starting
// work at the bucket's priority: with scheduler.range_size 0, one batch of
// IndexBlockWorkflows per local activity (the seed's scheduler); otherwise
// the newest scheduler.single_heights heights so, and everything below in
// IndexRange workflows of range_size heights, one per local activity,
// never across a level boundary. Three bounds keep Temporal and the node
// from flooding: the start rate (a workflow timer between starts, from
// rate_limit in workflow starts/s and heights_per_second in heights/s),
// the in-flight window (heights started and not yet indexed, checked
// against the database; a finished range wakes the scheduler with
// RangeDoneSignal, a poll covers the rest), and the history size
// (ContinueAsNew every few thousand heights, carrying what is left so that
// no height is scheduled twice or dropped).
func (w *Workflows) Scheduler(ctx workflow.Context, in types.SchedulerInput) (types.SchedulerResult, error) {
	c := w.Chain
	s := newSchedulerRun(ctx, c, in)
	if err := workflow.SetQueryHandler(ctx, temporal.SchedulerProgressQuery, func() (temporal.SchedulerProgress, error) {
		return s.progress(ctx), nil
	}); err != nil {
		return types.SchedulerResult{}, err
	}
	if err := workflow.SetQueryHandler(ctx, temporal.SchedulerPausedQuery, s.pausedQuery); err != nil {
		return types.SchedulerResult{}, err
	}
	return s.run(ctx)
}

// schedulerRun is the state of one run.
type schedulerRun struct {
	ch        ChainSetup
	chainID   string
	head      uint64
	remaining []chaindata.HeightRange
	state     types.SchedulerState
	spans     []types.LevelSpan

	began     time.Time
	thisRun   uint64
	nextBatch time.Time
	// rangeDone receives RangeDoneSignal (range mode only).
	rangeDone workflow.ReceiveChannel
	// pauseSignal receives SchedulerPauseSignal (nil for a run recorded
	// before the pause: scheduler_pause.go).
	pauseSignal workflow.ReceiveChannel

	// The head check (scheduler_shrink.go): on unless the run was recorded
	// before it; the highest head seen confirmed in this run, and when the
	// node may be asked again after it could not answer.
	checkHead   bool
	knownHead   uint64
	headKnown   bool
	nextHeadAsk time.Time

	// Starts as regular activities (scheduler_starts.go): on unless the
	// run was recorded before it.
	startsAsActivities bool
}

func newSchedulerRun(ctx workflow.Context, c ChainSetup, in types.SchedulerInput) *schedulerRun {
	s := &schedulerRun{
		ch:        c,
		chainID:   in.ChainID,
		head:      in.Head,
		remaining: append([]chaindata.HeightRange(nil), in.Remaining...),
		state:     in.State,
		began:     workflow.Now(ctx),
		checkHead: workflow.GetVersion(ctx, shrinkChange, workflow.DefaultVersion, 1) == 1,
	}
	s.startsAsActivities = workflow.GetVersion(ctx, startActivityChange, workflow.DefaultVersion, 1) == 1
	first := s.state.Buckets == nil
	if first {
		s.state.Owned = chaindata.Span(s.remaining)
		// The mode is chosen once, for the scheduler's whole life (it is
		// carried in the state), so a config change never alters a
		// running scheduler's commands.
		if workflow.GetVersion(ctx, indexRangeChange, workflow.DefaultVersion, 1) == 1 && c.Settings.Scheduler.Ranges() {
			s.state.RangeSize = uint64(c.Settings.Scheduler.RangeSize)
			s.state.SingleHeights = uint64(max(c.Settings.Scheduler.SingleHeights, 0))
		}
	}
	if s.ranges() {
		s.rangeDone = workflow.GetSignalChannel(ctx, temporal.RangeDoneSignal)
	}
	s.listenForPause(ctx)
	s.spans = types.LevelSpans(s.head, s.state.Owned.From, c.Settings.BlockTime)
	if first {
		for _, sp := range s.spans {
			s.state.Buckets = append(s.state.Buckets, temporal.BucketProgress{
				Level: int(sp.Level), Name: sp.Level.String(), Total: chaindata.Overlap(s.remaining, sp.Range),
			})
		}
		// Heights above the reference head count as the newest bucket.
		if above := chaindata.Overlap(s.remaining, chaindata.HeightRange{From: s.head + 1, To: ^uint64(0)}); above > 0 && len(s.state.Buckets) > 0 {
			s.state.Buckets[0].Total += above
		}
		workflow.GetLogger(ctx).Info("scheduler started",
			"chain_id", s.chainID, "from", s.state.Owned.From, "to", s.state.Owned.To, "head", s.head,
			"heights", chaindata.TotalLen(s.remaining), "buckets", s.state.Buckets,
			"range_size", s.state.RangeSize, "single_heights", s.state.SingleHeights)
	}
	return s
}

// run is the scheduler's state machine, whole, in the order a run meets
// its states; each helper named here does one state's waiting or work and
// returns to this loop:
//
//	paused         holdWhilePaused (scheduler_pause.go): waits for resume,
//	               starting nothing; checked before every start.
//	head check     shrinkToHead (scheduler_shrink.go): heights above the
//	               node's confirmed head leave what it owns.
//	continue       after scheduler.continue_as_new_after heights: the rate
//	               interval waited out, signals dropped, ContinueAsNew
//	               with what is left.
//	next unit      nextUnit (below): a batch of single heights or a range,
//	               newest first, never across a level boundary.
//	window         waitForWindow (scheduler_window.go): until the started,
//	               unindexed heights leave room (replan after a shrink).
//	rate           waitForRate (below): the start rate's timer.
//	start          StartRange or StartIndex (local activities, retried
//	               until done); only then does the unit leave remaining.
//	drain          drain (scheduler_window.go): with nothing left, until
//	               the started heights are indexed (at most maxDrain).
//	done           the result, after the last rate interval.
func (s *schedulerRun) run(ctx workflow.Context) (types.SchedulerResult, error) {
	cfg := s.ch.Settings.Scheduler
	lctx := workflow.WithLocalActivityOptions(ctx, s.ch.Options.LocalActivity())
	log := workflow.GetLogger(ctx)
	for len(s.remaining) > 0 {
		// A paused scheduler waits here, not polling its window meanwhile.
		if err := s.holdWhilePaused(ctx); err != nil {
			return types.SchedulerResult{}, err
		}
		if s.shrinkToHead(ctx, lctx); len(s.remaining) == 0 {
			break
		}
		if s.thisRun >= uint64(cfg.ContinueAsNewAfter) {
			// The next run starts its first batch at once: wait out this
			// run's last interval first, or the hand-over bursts two
			// batches within one interval.
			if err := s.waitForRate(ctx); err != nil {
				return types.SchedulerResult{}, err
			}
			s.drainSignals()
			s.takePauseSignals() // a pause carries over, in the state
			s.state.Runs++
			log.Info("scheduler continues as new", "chain_id", s.chainID, "runs", s.state.Runs,
				"scheduled", s.state.Scheduled, "remaining", chaindata.TotalLen(s.remaining), "buckets", s.state.Buckets)
			return types.SchedulerResult{}, workflow.NewContinueAsNewError(ctx, temporal.SchedulerWorkflow, types.SchedulerInput{
				ChainID: s.chainID, Head: s.head, Remaining: s.remaining, State: s.state,
			})
		}
		batch, level, isRange := s.nextUnit()
		replan, err := s.waitForWindow(ctx, lctx, batch.Len())
		if err != nil {
			return types.SchedulerResult{}, err
		}
		if replan {
			continue
		}
		if err := s.waitForRate(ctx); err != nil {
			return types.SchedulerResult{}, err
		}
		// Paused while it waited for its window or its rate: nothing starts.
		if err := s.holdWhilePaused(ctx); err != nil {
			return types.SchedulerResult{}, err
		}
		starts := cfg.BatchSize // the seed's pace: a batch costs its full size
		if isRange {
			starts = 1
			err = s.startUnit(ctx, lctx, nil, a.StartRange, types.StartRangeInput{
				ChainID: s.chainID, Range: batch, Level: level,
			})
		} else {
			var r types.StartIndexResult
			err = s.startUnit(ctx, lctx, &r, a.StartIndex, types.StartIndexInput{
				ChainID: s.chainID, Heights: batch.Descending(), Level: level, SkipIndexed: true,
				Mode: types.IndexModeScheduler,
			})
		}
		if err != nil {
			return types.SchedulerResult{}, err
		}
		// Only now, with the work started, does it leave `remaining`: a
		// failure above retries the same heights, never skips them.
		s.take(batch, level)
		if isRange {
			s.state.Ranges++
		}
		s.nextBatch = s.nextBatch.Add(s.interval(starts, batch.Len()))
	}
	// Keep owning the range until the started heights are indexed. The last
	// batches are the oldest heights, so until they land the watermark stays
	// low, and a HeadScan seeing the backlog with no scheduler running would
	// start another over the whole range again.
	if workflow.GetVersion(ctx, drainChange, workflow.DefaultVersion, 1) == 1 {
		if err := s.drain(ctx, lctx); err != nil {
			return types.SchedulerResult{}, err
		}
	}
	// Wait out the last interval too, so that a next scheduler (or the next
	// run) never starts two batches closer than the rate allows.
	if err := s.waitForRate(ctx); err != nil {
		return types.SchedulerResult{}, err
	}
	s.state.Runs++
	log.Info("scheduler finished", "chain_id", s.chainID, "runs", s.state.Runs,
		"scheduled", s.state.Scheduled, "buckets", s.state.Buckets)
	return types.SchedulerResult{Scheduled: s.state.Scheduled, Runs: s.state.Runs, Buckets: s.state.Buckets}, nil
}

// nextUnit is the next heights to start, from the top of the newest
// remaining range, never crossing a level boundary: a batch of at most
// batch_size single heights (isRange false) or, below the newest
// single_heights heights in range mode, one range of at most range_size.
func (s *schedulerRun) nextUnit() (chaindata.HeightRange, types.PriorityLevel, bool) {
	top := s.remaining[len(s.remaining)-1]
	size, floor, isRange := uint64(s.ch.Settings.Scheduler.BatchSize), uint64(0), false
	if s.ranges() {
		if sf := s.singleFloor(); top.To >= sf {
			floor = sf // single heights down to the floor, not below
		} else {
			size, isRange = s.state.RangeSize, true
		}
	}
	level := s.levelOf(top.To)
	from := max(top.From, floor)
	if top.To-from >= size {
		from = top.To - size + 1
	}
	for _, sp := range s.spans {
		if sp.Level == level && sp.Range.From > from && sp.Range.From <= top.To {
			from = sp.Range.From
		}
	}
	return chaindata.HeightRange{From: from, To: top.To}, level, isRange
}

// ranges tells whether this scheduler indexes its backlog in ranges.
func (s *schedulerRun) ranges() bool { return s.state.RangeSize > 0 }

// singleFloor is the lowest of the newest single_heights heights below the
// reference head (heights above the head are single too).
func (s *schedulerRun) singleFloor() uint64 {
	if s.head+1 < s.state.SingleHeights {
		return 0
	}
	return s.head + 1 - s.state.SingleHeights
}

// interval is the pause that starting `starts` workflows over n heights
// earns: rate_limit counts workflow starts per second, heights_per_second
// (0: no cap) heights.
func (s *schedulerRun) interval(starts int, n uint64) time.Duration {
	// Rounded up, so that no window of one second holds more than the
	// limits allow.
	cfg := s.ch.Settings.Scheduler
	d := time.Duration(math.Ceil(float64(starts) / cfg.RateLimit * float64(time.Second)))
	if cfg.HeightsPerSecond > 0 {
		d = max(d, time.Duration(math.Ceil(float64(n)/cfg.HeightsPerSecond*float64(time.Second))))
	}
	return d
}

func (s *schedulerRun) levelOf(h uint64) types.PriorityLevel {
	for _, sp := range s.spans {
		if sp.Range.Contains(h) {
			return sp.Level
		}
	}
	return types.High // above the reference head
}

// take removes a started batch from the top of `remaining` and counts it.
func (s *schedulerRun) take(batch chaindata.HeightRange, level types.PriorityLevel) {
	last := len(s.remaining) - 1
	if batch.From == s.remaining[last].From {
		s.remaining = s.remaining[:last]
	} else {
		s.remaining[last].To = batch.From - 1
	}
	n := batch.Len()
	s.thisRun += n
	s.state.Scheduled += n
	s.state.Pending = append(s.state.Pending, batch)
	s.state.InFlight += n
	for i := range s.state.Buckets {
		if types.PriorityLevel(s.state.Buckets[i].Level) == level {
			s.state.Buckets[i].Done += n
		}
	}
}

// waitForRate sleeps until the next batch is due (workflow time).
func (s *schedulerRun) waitForRate(ctx workflow.Context) error {
	now := workflow.Now(ctx)
	if s.nextBatch.IsZero() || !s.nextBatch.After(now) {
		if s.nextBatch.IsZero() || s.nextBatch.Before(now) {
			s.nextBatch = now
		}
		return nil
	}
	if err := workflow.Sleep(ctx, s.nextBatch.Sub(now)); err != nil {
		return err
	}
	s.nextBatch = workflow.Now(ctx)
	return nil
}

func (s *schedulerRun) progress(ctx workflow.Context) temporal.SchedulerProgress {
	elapsed := workflow.Now(ctx).Sub(s.began)
	p := temporal.SchedulerProgress{
		ChainID:   s.chainID,
		Head:      s.head,
		Owned:     s.state.Owned,
		Remaining: chaindata.TotalLen(s.remaining),
		Scheduled: s.state.Scheduled,
		Buckets:   s.state.Buckets,
		Runs:      s.state.Runs + 1,
		InFlight:  s.state.InFlight,
		Elapsed:   elapsed,
		RangeSize: s.state.RangeSize,
		Ranges:    s.state.Ranges,
		Dropped:   s.state.Dropped,
		Paused:    s.state.Paused,
	}
	if elapsed > 0 {
		p.Rate = float64(s.thisRun) / elapsed.Seconds()
	}
	return p
}

// outageRetry is the pause before a scheduler retries a local activity that
// used up its own attempts (the database or Temporal was down for a while).
const outageRetry = 5 * time.Second

// untilDone runs a local activity until it succeeds: an outage of the
// database or the frontend pauses the catch-up instead of failing it, and
// since a batch leaves `remaining` only once started, nothing is skipped.
func (s *schedulerRun) untilDone(ctx, lctx workflow.Context, out any, fn any, arg any) error {
	return s.retryOutage(ctx, func() error { return workflow.ExecuteLocalActivity(lctx, fn, arg).Get(lctx, out) })
}

// retryOutage runs step until it succeeds, pausing outageRetry between
// rounds of its activity's bounded policy (retry.local or retry.admin,
// shared with the scans, which may give up): the scheduler may not.
// Workflow code, replay-tested: the commands are those untilDone always
// gave.
func (s *schedulerRun) retryOutage(ctx workflow.Context, step func() error) error {
	for {
		err := step()
		if err == nil || ctx.Err() != nil {
			return err
		}
		workflow.GetLogger(ctx).Warn("scheduler step failed; retrying", "chain_id", s.chainID, "error", err)
		if err := workflow.Sleep(ctx, outageRetry); err != nil {
			return err
		}
	}
}
