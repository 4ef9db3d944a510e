package workflow

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/tideline-dev/tideline/pkg/chain"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// windowPoll is how long the scheduler waits before asking again how many
// of its started heights are done, when the in-flight window is full.
const windowPoll = 2 * time.Second

// maxDrain bounds how long a scheduler that has started everything waits
// for its in-flight heights before it finishes anyway.
const maxDrain = 10 * time.Minute

// drainChange versions the wait for in-flight heights added at the end of a
// scheduler, so that runs recorded before it still replay.
const drainChange = "scheduler-drain"

// Scheduler catches a chain up over a large backlog. It walks its ranges
// from the newest height down, which serves the seed's buckets in order
// (High, then Medium, Low, UltraLow; newest first within each), starting
// one batch of IndexBlockWorkflows per local activity at the bucket's
// priority. Three bounds keep Temporal and the node from flooding: the
// start rate (a workflow timer between batches), the in-flight window
// (started and not yet indexed, checked against the database), and the
// history size (ContinueAsNew every few thousand heights, carrying what is
// left so that no height is scheduled twice or dropped).
func (w *Workflows) Scheduler(ctx workflow.Context, in types.SchedulerInput) (types.SchedulerResult, error) {
	o, err := w.options(in.ChainID)
	if err != nil {
		return types.SchedulerResult{}, err
	}
	s := newSchedulerRun(ctx, o, in)
	if err := workflow.SetQueryHandler(ctx, temporal.SchedulerProgressQuery, func() (types.SchedulerProgress, error) {
		return s.progress(ctx), nil
	}); err != nil {
		return types.SchedulerResult{}, err
	}
	return s.run(ctx)
}

// schedulerRun is the state of one run.
type schedulerRun struct {
	opts      temporal.Options
	chainID   string
	head      uint64
	remaining []chain.HeightRange
	state     types.SchedulerState
	spans     []types.LevelSpan

	began     time.Time
	thisRun   uint64
	nextBatch time.Time
}

func newSchedulerRun(ctx workflow.Context, o temporal.Options, in types.SchedulerInput) *schedulerRun {
	s := &schedulerRun{
		opts:      o,
		chainID:   in.ChainID,
		head:      in.Head,
		remaining: append([]chain.HeightRange(nil), in.Remaining...),
		state:     in.State,
		began:     workflow.Now(ctx),
	}
	first := s.state.Buckets == nil
	if first {
		s.state.Owned = chain.Span(s.remaining)
	}
	s.spans = types.LevelSpans(s.head, s.state.Owned.From, o.Chain.BlockTime)
	if first {
		for _, sp := range s.spans {
			s.state.Buckets = append(s.state.Buckets, types.BucketProgress{
				Level: sp.Level, Name: sp.Level.String(), Total: chain.Overlap(s.remaining, sp.Range),
			})
		}
		// Heights above the reference head count as the newest bucket.
		if above := chain.Overlap(s.remaining, chain.HeightRange{From: s.head + 1, To: ^uint64(0)}); above > 0 && len(s.state.Buckets) > 0 {
			s.state.Buckets[0].Total += above
		}
		workflow.GetLogger(ctx).Info("scheduler started",
			"chain_id", s.chainID, "from", s.state.Owned.From, "to", s.state.Owned.To, "head", s.head,
			"heights", chain.TotalLen(s.remaining), "buckets", s.state.Buckets)
	}
	return s
}

func (s *schedulerRun) run(ctx workflow.Context) (types.SchedulerResult, error) {
	cfg := s.opts.Chain.Scheduler
	lctx := workflow.WithLocalActivityOptions(ctx, s.opts.LocalActivity())
	interval := time.Duration(float64(cfg.BatchSize) / cfg.RateLimit * float64(time.Second))
	log := workflow.GetLogger(ctx)
	for len(s.remaining) > 0 {
		if s.thisRun >= uint64(cfg.ContinueAsNewAfter) {
			// The next run starts its first batch at once: wait out this
			// run's last interval first, or the hand-over bursts two
			// batches within one interval.
			if err := s.waitForRate(ctx); err != nil {
				return types.SchedulerResult{}, err
			}
			s.state.Runs++
			log.Info("scheduler continues as new", "chain_id", s.chainID, "runs", s.state.Runs,
				"scheduled", s.state.Scheduled, "remaining", chain.TotalLen(s.remaining), "buckets", s.state.Buckets)
			return types.SchedulerResult{}, workflow.NewContinueAsNewError(ctx, temporal.SchedulerWorkflow, types.SchedulerInput{
				ChainID: s.chainID, Head: s.head, Remaining: s.remaining, State: s.state,
			})
		}
		batch, level := s.nextBatchRange(cfg.BatchSize)
		if err := s.waitForWindow(ctx, lctx, batch.Len()); err != nil {
			return types.SchedulerResult{}, err
		}
		if err := s.waitForRate(ctx); err != nil {
			return types.SchedulerResult{}, err
		}
		var r types.StartIndexResult
		err := s.untilDone(ctx, lctx, &r, a.StartIndex, types.StartIndexInput{
			ChainID: s.chainID, Heights: batch.Descending(), Level: level, SkipIndexed: true,
		})
		if err != nil {
			return types.SchedulerResult{}, err
		}
		// Only now, with the batch started, does it leave `remaining`: a
		// failure above retries the same heights, never skips them.
		s.take(batch, level)
		s.nextBatch = s.nextBatch.Add(interval)
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

// nextBatchRange is the next heights to start: from the top of the newest
// remaining range, at most size, never crossing a level boundary.
func (s *schedulerRun) nextBatchRange(size int) (chain.HeightRange, types.PriorityLevel) {
	top := s.remaining[len(s.remaining)-1]
	level := s.levelOf(top.To)
	from := top.From
	if top.To-top.From >= uint64(size) {
		from = top.To - uint64(size) + 1
	}
	for _, sp := range s.spans {
		if sp.Level == level && sp.Range.From > from && sp.Range.From <= top.To {
			from = sp.Range.From
		}
	}
	return chain.HeightRange{From: from, To: top.To}, level
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
func (s *schedulerRun) take(batch chain.HeightRange, level types.PriorityLevel) {
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
		if s.state.Buckets[i].Level == level {
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

// waitForWindow blocks while starting n more heights would put more than
// max_in_flight started-but-unindexed heights on Temporal. The database is
// the progress tracker: a started height leaves the window once indexed.
func (s *schedulerRun) waitForWindow(ctx, lctx workflow.Context, n uint64) error {
	limit := uint64(s.opts.Chain.Scheduler.MaxInFlight)
	for s.state.InFlight+n > limit {
		if err := s.refreshInFlight(lctx); err != nil {
			return err
		}
		if s.state.InFlight+n <= limit {
			return nil
		}
		if err := workflow.Sleep(ctx, windowPoll); err != nil {
			return err
		}
	}
	return nil
}

// drain waits, at most maxDrain, until every started height is indexed.
func (s *schedulerRun) drain(ctx, lctx workflow.Context) error {
	deadline := workflow.Now(ctx).Add(maxDrain)
	for len(s.state.Pending) > 0 {
		if err := s.refreshInFlight(lctx); err != nil {
			return err
		}
		if len(s.state.Pending) == 0 {
			return nil
		}
		if !workflow.Now(ctx).Before(deadline) {
			workflow.GetLogger(ctx).Warn("scheduler finishing with heights still in flight",
				"chain_id", s.chainID, "in_flight", s.state.InFlight, "waited", maxDrain)
			return nil
		}
		if err := workflow.Sleep(ctx, windowPoll); err != nil {
			return err
		}
	}
	return nil
}

// refreshInFlight asks the database which pending heights are indexed and
// drops the finished batches from the window.
func (s *schedulerRun) refreshInFlight(lctx workflow.Context) error {
	var indexed []uint64
	err := s.untilDone(lctx, lctx, &indexed, a.CountIndexed, types.CountIndexedInput{
		ChainID: s.chainID, Ranges: s.state.Pending,
	})
	if err != nil {
		return err
	}
	var still []chain.HeightRange
	s.state.InFlight = 0
	for i, r := range s.state.Pending {
		done := uint64(0)
		if i < len(indexed) {
			done = min(indexed[i], r.Len())
		}
		if done == r.Len() {
			continue
		}
		still = append(still, r)
		s.state.InFlight += r.Len() - done
	}
	s.state.Pending = still
	return nil
}

func (s *schedulerRun) progress(ctx workflow.Context) types.SchedulerProgress {
	elapsed := workflow.Now(ctx).Sub(s.began)
	p := types.SchedulerProgress{
		ChainID:   s.chainID,
		Head:      s.head,
		Owned:     s.state.Owned,
		Remaining: chain.TotalLen(s.remaining),
		Scheduled: s.state.Scheduled,
		Buckets:   s.state.Buckets,
		Runs:      s.state.Runs + 1,
		InFlight:  s.state.InFlight,
		Elapsed:   elapsed,
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
	for {
		err := workflow.ExecuteLocalActivity(lctx, fn, arg).Get(lctx, out)
		if err == nil || ctx.Err() != nil {
			return err
		}
		workflow.GetLogger(ctx).Warn("scheduler step failed; retrying", "chain_id", s.chainID, "error", err)
		if err := workflow.Sleep(ctx, outageRetry); err != nil {
			return err
		}
	}
}
