package workflow

import (
	"go.temporal.io/sdk/workflow"

	"github.com/tideline-dev/tideline/pkg/temporal"
)

// The Scheduler pauses.
//
// `indexer chain pause` (and every worker, while the chain's stored state
// is paused) sends temporal.SchedulerPauseSignal with true; the scheduler
// then starts nothing new (no batch, no range) and waits, with no timer
// and no activity, until the same signal comes with false
// (`indexer chain resume`). What it started before goes on: those are
// workflows of their own, and they finish. The pause is part of its state,
// so it carries over ContinueAsNew, and its `paused` query
// (temporal.SchedulerPausedQuery) and progress say it as soon as the
// signal is in: a goroutine applies each signal when it arrives, while the
// main loop only acts on the state before it starts something. Both read
// one channel in order and write what they read, and neither adds a
// command, so histories recorded before the goroutine replay unchanged.

// pauseChange versions the pause: a scheduler whose run was recorded
// before it ignores the signal (it had no channel for it), so its history
// replays as it ran.
const pauseChange = "scheduler-pause"

// holdWhilePaused takes in the pause signals received so far and, while
// paused, waits for a resume. It returns at once when not paused.
func (s *schedulerRun) holdWhilePaused(ctx workflow.Context) error {
	if s.pauseSignal == nil {
		return nil
	}
	s.takePauseSignals()
	if !s.state.Paused {
		return nil
	}
	log := workflow.GetLogger(ctx)
	log.Info("scheduler paused; starting nothing until resumed", "chain_id", s.chainID,
		"scheduled", s.state.Scheduled, "in_flight", s.state.InFlight)
	if err := workflow.Await(ctx, func() bool { return !s.state.Paused }); err != nil {
		return err
	}
	log.Info("scheduler resumed", "chain_id", s.chainID)
	return nil
}

// takePauseSignals applies the pause signals received so far that the
// goroutine of listenForPause has not taken yet (it runs only when the
// main loop blocks), in order: the last one says.
func (s *schedulerRun) takePauseSignals() {
	if s.pauseSignal == nil {
		return
	}
	var paused bool
	for s.pauseSignal.ReceiveAsync(&paused) {
		s.state.Paused = paused
	}
}

// pausedQuery answers temporal.SchedulerPausedQuery.
func (s *schedulerRun) pausedQuery() (bool, error) { return s.state.Paused, nil }

// listenForPause opens the pause signal's channel for a run recorded with
// the pause (pauseChange), and applies each signal as it arrives.
func (s *schedulerRun) listenForPause(ctx workflow.Context) {
	if workflow.GetVersion(ctx, pauseChange, workflow.DefaultVersion, 1) != 1 {
		return
	}
	s.pauseSignal = workflow.GetSignalChannel(ctx, temporal.SchedulerPauseSignal)
	workflow.Go(ctx, func(ctx workflow.Context) {
		var paused bool
		for s.pauseSignal.Receive(ctx, &paused) {
			s.state.Paused = paused
		}
	})
}
