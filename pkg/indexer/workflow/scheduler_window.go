package workflow

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
)

// The Scheduler's in-flight window: heights started and not yet indexed,
// as the database says (CountIndexed over the started batches and ranges).

// windowPoll is how long the scheduler waits before asking again how many
// of its started heights are done, when the in-flight window is full.
const windowPoll = 2 * time.Second

// maxDrain bounds how long a scheduler that has started everything waits
// for its in-flight heights before it finishes anyway.
const maxDrain = 10 * time.Minute

// waitForWindow blocks while starting n more heights would put more than
// max_in_flight started-but-unindexed heights on Temporal. The database is
// the progress tracker: a started height leaves the window once indexed.
// It returns replan true when the scheduler shrank meanwhile (the next
// unit must be chosen again).
func (s *schedulerRun) waitForWindow(ctx, lctx workflow.Context, n uint64) (replan bool, err error) {
	limit := uint64(s.ch.Settings.Scheduler.MaxInFlight)
	// Waits for a condition (heights indexed), not for a failure to pass.
	for s.state.InFlight+n > limit {
		if s.shrinkToHead(ctx, lctx) {
			return true, nil
		}
		if err := s.refreshInFlight(lctx); err != nil {
			return false, err
		}
		if s.state.InFlight+n <= limit {
			return false, nil
		}
		if err := s.awaitWindowChange(ctx); err != nil {
			return false, err
		}
	}
	return false, nil
}

// drain waits, at most maxDrain, until every started height is indexed.
func (s *schedulerRun) drain(ctx, lctx workflow.Context) error {
	deadline := workflow.Now(ctx).Add(maxDrain)
	// Waits for a condition (heights indexed), not for a failure to pass.
	for len(s.state.Pending) > 0 {
		s.shrinkToHead(ctx, lctx)
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
		if err := s.awaitWindowChange(ctx); err != nil {
			return err
		}
	}
	return nil
}

// awaitWindowChange waits before the next look at the window: windowPoll,
// or in range mode until a range signals its end, whichever comes first.
// Signals are only hints (the database says what is indexed): one lost
// costs a poll. (Not the operator's pause: that is scheduler_pause.go.)
func (s *schedulerRun) awaitWindowChange(ctx workflow.Context) error {
	if !s.ranges() {
		return workflow.Sleep(ctx, windowPoll)
	}
	tctx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	timer := workflow.NewTimer(tctx, windowPoll)
	sel := workflow.NewSelector(ctx)
	sel.AddFuture(timer, func(workflow.Future) {})
	sel.AddReceive(s.rangeDone, func(c workflow.ReceiveChannel, _ bool) {
		var done chaindata.HeightRange
		c.Receive(ctx, &done)
	})
	sel.Select(ctx)
	return ctx.Err()
}

// drainSignals drops the range-done signals received so far: the look at
// the database that follows covers them.
func (s *schedulerRun) drainSignals() {
	if s.rangeDone == nil {
		return
	}
	var done chaindata.HeightRange
	for s.rangeDone.ReceiveAsync(&done) {
	}
}

// refreshInFlight asks the database which pending heights are indexed and
// drops the finished batches from the window.
func (s *schedulerRun) refreshInFlight(lctx workflow.Context) error {
	s.drainSignals()
	var indexed []uint64
	err := s.untilDone(lctx, lctx, &indexed, a.CountIndexed, types.CountIndexedInput{
		ChainID: s.chainID, Ranges: s.state.Pending,
	})
	if err != nil {
		return err
	}
	var still []chaindata.HeightRange
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
