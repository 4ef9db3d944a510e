package workflow_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// queryPaused asks a running scheduler its paused query and progress.
func queryPaused(t *testing.T, env *testsuite.TestWorkflowEnvironment) (bool, temporal.SchedulerProgress) {
	t.Helper()
	v, err := env.QueryWorkflow(temporal.SchedulerPausedQuery)
	require.NoError(t, err)
	var paused bool
	require.NoError(t, v.Get(&paused))
	v, err = env.QueryWorkflow(temporal.SchedulerProgressQuery)
	require.NoError(t, err)
	var p temporal.SchedulerProgress
	require.NoError(t, v.Get(&p))
	return paused, p
}

// 5000..1 at 100 heights/s, paused at 10 s, resumed at 10 min: nothing is
// started in between (no batch, no window poll), the queries say paused,
// and after the resume the rest is started, each height once.
func TestSchedulerPauseStartsNothingUntilResumed(t *testing.T) {
	wfs := newWorkflows(chainConfig(func(c *config.Chain) { c.Scheduler.ContinueAsNewAfter = 1_000_000 }))
	r := orderedRecorder(5000)
	env := newEnv(wfs, t0)
	mockStarts(env, r, nil)
	pauseAt, resumeAt := 10*time.Second, 10*time.Minute
	var midPaused, afterPaused bool
	var mid temporal.SchedulerProgress
	var countsWhilePaused [2]int
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(temporal.SchedulerPauseSignal, true)
	}, pauseAt)
	env.RegisterDelayedCallback(func() {
		midPaused, mid = queryPaused(t, env)
		r.mu.Lock()
		countsWhilePaused[0] = r.countCalls
		r.mu.Unlock()
	}, 5*time.Minute)
	env.RegisterDelayedCallback(func() {
		r.mu.Lock()
		countsWhilePaused[1] = r.countCalls
		r.mu.Unlock()
		env.SignalWorkflow(temporal.SchedulerPauseSignal, false)
	}, resumeAt)
	env.RegisterDelayedCallback(func() { afterPaused, _ = queryPaused(t, env) }, resumeAt+time.Second)
	mockAgreeingHead(env, schedIn(5000, chaindata.HeightRange{From: 1, To: 5000}))
	env.ExecuteWorkflow(temporal.SchedulerWorkflow, schedIn(5000, chaindata.HeightRange{From: 1, To: 5000}))
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	require.NoError(t, r.err)

	var res types.SchedulerResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, uint64(5000), res.Scheduled, "every height started once after the resume")
	require.True(t, midPaused, "the paused query while paused")
	require.True(t, mid.Paused, "the progress query while paused")
	require.False(t, afterPaused)
	require.Equal(t, countsWhilePaused[0], countsWhilePaused[1], "no window poll while paused")

	var before, during, after int
	for _, c := range r.snapshot() {
		at := c.At.Sub(t0)
		switch {
		case at <= pauseAt:
			before++
		case at < resumeAt:
			during++
		default:
			after++
		}
	}
	require.Positive(t, before)
	require.Zero(t, during, "nothing started while paused")
	require.Positive(t, after)
	require.Less(t, mid.Scheduled, uint64(5000))
}

// A pause carries over ContinueAsNew: the next run starts paused, and its
// first start waits for the resume. Signals before the hand-over count.
func TestSchedulerPauseCarriesOverContinueAsNew(t *testing.T) {
	wfs := newWorkflows(chainConfig(func(c *config.Chain) { c.Scheduler.ContinueAsNewAfter = 1000 }))
	r := orderedRecorder(3000)
	env := newEnv(wfs, t0)
	mockStarts(env, r, nil)
	// Paused then resumed then paused, all before the run's 10 batches are
	// done (one a second): the last signal says.
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(temporal.SchedulerPauseSignal, true)
		env.SignalWorkflow(temporal.SchedulerPauseSignal, false)
	}, 3*time.Second)
	mockAgreeingHead(env, schedIn(3000, chaindata.HeightRange{From: 1, To: 3000}))
	env.ExecuteWorkflow(temporal.SchedulerWorkflow, schedIn(3000, chaindata.HeightRange{From: 1, To: 3000}))
	require.True(t, env.IsWorkflowCompleted())
	var canErr *workflow.ContinueAsNewError
	require.True(t, errors.As(env.GetWorkflowError(), &canErr), "got %v", env.GetWorkflowError())
	var can types.SchedulerInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(canErr.Input, &can))
	require.False(t, can.State.Paused, "paused then resumed: not paused")
	before := len(r.snapshot())

	// A run a pause carried into (in its state) waits until resumed.
	can.State.Paused = true
	env = newEnv(wfs, t0)
	mockStarts(env, r, nil)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(temporal.SchedulerPauseSignal, false) }, time.Hour)
	mockAgreeingHead(env, can)
	env.ExecuteWorkflow(temporal.SchedulerWorkflow, can)
	require.True(t, env.IsWorkflowCompleted())
	calls := r.snapshot()[before:]
	require.NotEmpty(t, calls)
	require.False(t, calls[0].At.Before(t0.Add(time.Hour)), "the first start waited for the resume: %v", calls[0].At)
}

// The queries say paused as soon as the signal is in, while the scheduler
// still waits for its rate or window (it checks for a pause only before it
// starts something): `indexer chain pause` followed by `status` shows the
// pause at once.
func TestSchedulerPausedQueryAnswersAtOnce(t *testing.T) {
	wfs := newWorkflows(chainConfig(func(c *config.Chain) { c.Scheduler.ContinueAsNewAfter = 1_000_000 }))
	r := orderedRecorder(5000)
	env := newEnv(wfs, t0)
	mockStarts(env, r, nil)
	pauseAt := 10*time.Second + 250*time.Millisecond // between two batches
	var paused, pausedLater bool
	var progress temporal.SchedulerProgress
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(temporal.SchedulerPauseSignal, true) }, pauseAt)
	env.RegisterDelayedCallback(func() { paused, progress = queryPaused(t, env) }, pauseAt+time.Millisecond)
	env.RegisterDelayedCallback(func() { pausedLater, _ = queryPaused(t, env) }, pauseAt+time.Minute)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(temporal.SchedulerPauseSignal, false) }, pauseAt+2*time.Minute)
	mockAgreeingHead(env, schedIn(5000, chaindata.HeightRange{From: 1, To: 5000}))
	env.ExecuteWorkflow(temporal.SchedulerWorkflow, schedIn(5000, chaindata.HeightRange{From: 1, To: 5000}))
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	require.NoError(t, r.err)
	require.True(t, paused, "the paused query a millisecond after the signal")
	require.True(t, progress.Paused, "the progress query a millisecond after the signal")
	require.True(t, pausedLater)
	var res types.SchedulerResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, uint64(5000), res.Scheduled, "every height started once after the resume")
}
