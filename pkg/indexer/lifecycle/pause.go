package lifecycle

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/api/serviceerror"

	"github.com/tideline-dev/tideline/pkg/registry"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// SchedulerState is how a chain's catch-up scheduler stands.
type SchedulerState int

const (
	// NoScheduler: none runs (none was needed, or it finished).
	NoScheduler SchedulerState = iota
	// SchedulerPaused: it runs and says it is paused.
	SchedulerPaused
	// SchedulerActive: it runs and says it is not paused.
	SchedulerActive
	// SchedulerUnknown: it runs but did not say (PauseResult.Unanswered).
	SchedulerUnknown
)

func (s SchedulerState) String() string {
	return [...]string{"none", "paused", "active", "unknown"}[s]
}

// PauseResult is how a chain stands in Temporal after a pause or a resume
// (what was found, after this call's changes), and what the call changed.
type PauseResult struct {
	ChainID string
	Paused  bool // what was asked: paused, or active
	// Stored is set when the command changed the stored state (false:
	// it was so already; always false for a worker's step).
	Stored bool
	// Schedules are the chain's Schedules that exist, all now as asked
	// unless an error says otherwise; SchedulesChanged those this call
	// paused or unpaused.
	Schedules, SchedulesChanged []string
	// Scheduler is the scheduler's state, after the signal if one was
	// sent (Signalled).
	Scheduler SchedulerState
	Signalled bool
	// Unanswered is why the scheduler's state is unknown (SchedulerUnknown).
	// It was not signalled then; a command's state is stored, so the
	// workers ask again at every poll.
	Unanswered *UnansweredError
	// HeadScan is set when Resume could not start a HeadScan at once (it
	// runs at its next interval; not a failure of the resume).
	HeadScan error
}

// UnansweredError is a running scheduler that did not say whether it is
// paused.
type UnansweredError struct {
	ChainID string
	Err     error
}

func (e *UnansweredError) Error() string {
	msg := fmt.Sprintf("chain %q: its scheduler did not say whether it is paused, so it was not signalled: %v", e.ChainID, e.Err)
	if e.PredatesPause() {
		msg += "; it runs on a worker from before pausing existed and cannot be paused: reset it (indexer scheduler reset " + e.ChainID + ")"
	}
	return msg
}

func (e *UnansweredError) Unwrap() error { return e.Err }

// PredatesPause tells whether the scheduler refused the question (it has
// no paused query: a worker from before pausing existed runs it), rather
// than no worker answering in time.
func (e *UnansweredError) PredatesPause() bool {
	var failed *serviceerror.QueryFailed
	return errors.As(e.Err, &failed)
}

// Pause stores the chain as paused, then pauses it in Temporal at once
// (EnsurePaused), so that nothing waits for a worker's poll. A registry
// error (a chain of the file, one not in the registry) is returned as it
// is, and nothing is touched.
func (c *Chains) Pause(ctx context.Context, id string) (PauseResult, error) {
	return c.setPaused(ctx, id, true)
}

// Resume stores the chain as active, resumes it in Temporal at once
// (EnsureActive) and starts a HeadScan, so that the chain catches up now
// rather than at the next interval. Only the command starts one: every
// worker following the resume would start its own.
func (c *Chains) Resume(ctx context.Context, id string) (PauseResult, error) {
	res, err := c.setPaused(ctx, id, false)
	if err != nil {
		return res, err
	}
	tctx, cancel := c.bound(ctx, 1)
	defer cancel()
	if err := temporal.TriggerSchedule(tctx, c.Temporal, temporal.HeadScanScheduleID(id)); err != nil {
		res.HeadScan = &Error{ChainID: id, Step: StepHeadScan, Err: err}
	}
	return res, nil
}

func (c *Chains) setPaused(ctx context.Context, id string, paused bool) (PauseResult, error) {
	state := registry.Active
	if paused {
		state = registry.Paused
	}
	_, changed, err := c.Registry.SetState(ctx, id, state, false)
	if err != nil {
		return PauseResult{ChainID: id, Paused: paused}, err
	}
	res, err := c.hold(ctx, id, paused)
	res.Stored = changed
	return res, err
}

// EnsurePaused pauses the chain's Schedules and its scheduler where they
// are not: what a worker does while the stored state is paused (at every
// poll, so that a Schedule or scheduler resumed by anything else is paused
// again), and the second half of Pause.
func (c *Chains) EnsurePaused(ctx context.Context, id string) (PauseResult, error) {
	return c.hold(ctx, id, true)
}

// EnsureActive unpauses the chain's Schedules and resumes its scheduler
// where they are paused: what a worker does when it starts or resumes an
// active chain, and the second half of Resume.
func (c *Chains) EnsureActive(ctx context.Context, id string) (PauseResult, error) {
	return c.hold(ctx, id, false)
}

// hold brings the Schedules, then the scheduler, to paused (or not). The
// scheduler's turn comes even when the Schedules failed: a paused chain
// whose scheduler goes on starting heights is the worse half.
func (c *Chains) hold(ctx context.Context, id string, paused bool) (PauseResult, error) {
	ctx, cancel := c.bound(ctx, 1)
	defer cancel()
	res := PauseResult{ChainID: id, Paused: paused}
	sc, schedErr := temporal.SetSchedulesPaused(ctx, c.Temporal, id, paused)
	res.Schedules, res.SchedulesChanged = sc.Found, sc.Changed
	if schedErr != nil {
		schedErr = &Error{ChainID: id, Step: StepSchedules, Err: schedErr}
	}
	return res, errors.Join(schedErr, c.holdScheduler(ctx, id, paused, &res))
}

// holdScheduler is the one rule for the scheduler: ask it first, and send
// the pause signal only when it runs and says the other state. The signal
// is idempotent in effect, but each one is an event in the scheduler's
// history, and a paused chain is checked at every poll by every worker:
// signalling always would grow a paused scheduler's history without end.
// A scheduler that does not answer is not signalled either (see
// UnansweredError): one run by a worker from before pausing existed would
// ignore the signal, and for one whose worker did not answer in time the
// stored state makes the workers ask again at their next poll.
func (c *Chains) holdScheduler(ctx context.Context, id string, paused bool, res *PauseResult) error {
	actx, cancel := context.WithTimeout(ctx, AskTimeout)
	running, isPaused, err := temporal.SchedulerPaused(actx, c.Temporal, id)
	cancel()
	switch {
	case err != nil && !running:
		res.Scheduler = SchedulerUnknown
		return &Error{ChainID: id, Step: StepAsk, Err: err}
	case err != nil:
		res.Scheduler = SchedulerUnknown
		res.Unanswered = &UnansweredError{ChainID: id, Err: err}
		return nil
	case !running:
		res.Scheduler = NoScheduler
		return nil
	case isPaused == paused:
		res.Scheduler = stateOf(paused)
		return nil
	}
	res.Scheduler = stateOf(isPaused)
	running, err = temporal.SignalSchedulerPause(ctx, c.Temporal, id, paused)
	switch {
	case err != nil:
		return &Error{ChainID: id, Step: StepSignal, Err: err}
	case !running: // it finished meanwhile
		res.Scheduler = NoScheduler
	default:
		res.Scheduler, res.Signalled = stateOf(paused), true
	}
	return nil
}

func stateOf(paused bool) SchedulerState {
	if paused {
		return SchedulerPaused
	}
	return SchedulerActive
}
