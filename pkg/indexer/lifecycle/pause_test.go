package lifecycle_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	sdkworkflow "go.temporal.io/sdk/workflow"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/indexer/lifecycle"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/registry"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// A chain's pause and resume, by the command and by the workers' polls,
// with its real scheduler running: the state is stored, every Schedule is
// paused (or unpaused), and the scheduler is signalled only when it says
// the other state, so that the polls that keep a paused chain paused add
// nothing to its history.
func TestPauseAndResumeSignalOnlyWhatDiffers(t *testing.T) {
	const id = "lc-pause"
	ctx := testContext(t)
	c, _ := newChains(t)
	addChain(t, c, id, registry.Active)
	createSchedules(t, c.Temporal, id, false)
	runScheduler(t, c.Temporal, id, false)
	all := temporal.ScheduleIDs(id)

	// A worker starting an active chain finds nothing to change.
	res, err := c.EnsureActive(ctx, id)
	require.NoError(t, err)
	require.Equal(t, lifecycle.PauseResult{ChainID: id, Schedules: all, Scheduler: lifecycle.SchedulerActive}, res)

	res, err = c.Pause(ctx, id)
	require.NoError(t, err)
	require.Equal(t, lifecycle.PauseResult{ChainID: id, Paused: true, Stored: true, Schedules: all, SchedulesChanged: all,
		Scheduler: lifecycle.SchedulerPaused, Signalled: true}, res)
	require.Equal(t, registry.Paused, storedState(t, c, id).State)
	require.Equal(t, [2]int{allSchedules, allSchedules}, schedulesPaused(t, c.Temporal, id))
	running, paused, err := temporal.SchedulerPaused(ctx, c.Temporal, id)
	require.NoError(t, err)
	require.True(t, running && paused, "the scheduler says it is paused")

	// Paused again by the command, then kept paused by three polls:
	// nothing to change, no signal.
	res, err = c.Pause(ctx, id)
	require.NoError(t, err)
	require.Equal(t, lifecycle.PauseResult{ChainID: id, Paused: true, Schedules: all, Scheduler: lifecycle.SchedulerPaused}, res)
	for range 3 {
		res, err = c.EnsurePaused(ctx, id)
		require.NoError(t, err)
		require.Equal(t, lifecycle.PauseResult{ChainID: id, Paused: true, Schedules: all, Scheduler: lifecycle.SchedulerPaused}, res)
	}
	require.Equal(t, []bool{true}, pauseSignals(t, c.Temporal, id), "one signal for five pauses")

	// A Schedule unpaused by anything else is paused again by the next
	// poll; the scheduler, still paused, is left alone.
	require.NoError(t, c.Temporal.ScheduleClient().GetHandle(ctx, temporal.GapScanScheduleID(id)).Unpause(ctx, client.ScheduleUnpauseOptions{}))
	res, err = c.EnsurePaused(ctx, id)
	require.NoError(t, err)
	require.Equal(t, []string{temporal.GapScanScheduleID(id)}, res.SchedulesChanged)
	require.False(t, res.Signalled)
	require.Equal(t, [2]int{allSchedules, allSchedules}, schedulesPaused(t, c.Temporal, id))

	// Resumed: the stored state, every Schedule, the scheduler, and a
	// HeadScan started at once.
	res, err = c.Resume(ctx, id)
	require.NoError(t, err)
	require.NoError(t, res.HeadScan)
	require.Equal(t, lifecycle.PauseResult{ChainID: id, Stored: true, Schedules: all, SchedulesChanged: all,
		Scheduler: lifecycle.SchedulerActive, Signalled: true}, res)
	require.Equal(t, registry.Active, storedState(t, c, id).State)
	require.Equal(t, [2]int{allSchedules, 0}, schedulesPaused(t, c.Temporal, id))
	res, err = c.Resume(ctx, id)
	require.NoError(t, err)
	require.Equal(t, lifecycle.PauseResult{ChainID: id, Schedules: all, Scheduler: lifecycle.SchedulerActive}, res)
	require.Equal(t, []bool{true, false}, pauseSignals(t, c.Temporal, id))
}

// A chain of the config file, or one the registry does not hold, is
// refused with the registry's typed error, and nothing in Temporal is
// touched. A chain with no scheduler running is paused all the same.
func TestPauseRefusesWhatIsNotTheRegistrys(t *testing.T) {
	const fileID, unknown, idle = "lc-file", "lc-unknown", "lc-idle"
	ctx := testContext(t)
	c, _ := newChains(t, fileID)
	createSchedules(t, c.Temporal, fileID, false)

	_, err := c.Pause(ctx, fileID)
	var inFile *registry.DeclaredInFileError
	require.ErrorAs(t, err, &inFile)
	require.Empty(t, failedSteps(err), "refused, not failed")
	require.Equal(t, [2]int{allSchedules, 0}, schedulesPaused(t, c.Temporal, fileID), "the file's chain runs on")
	_, err = c.Resume(ctx, unknown)
	var notFound *registry.NotFoundError
	require.ErrorAs(t, err, &notFound)

	addChain(t, c, idle, registry.Active)
	createSchedules(t, c.Temporal, idle, false)
	res, err := c.Pause(ctx, idle)
	require.NoError(t, err)
	require.Equal(t, lifecycle.NoScheduler, res.Scheduler)
	require.False(t, res.Signalled)
	require.Equal(t, [2]int{allSchedules, allSchedules}, schedulesPaused(t, c.Temporal, idle))
}

// A scheduler run by a worker from before pausing existed has no paused
// query: it is not signalled (it would ignore the signal at every poll),
// the result says why, and the Schedules are paused all the same.
func TestASchedulerFromBeforePausingIsNotSignalled(t *testing.T) {
	const id = "lc-old"
	ctx := testContext(t)
	c, _ := newChains(t)
	createSchedules(t, c.Temporal, id, false)
	// The old scheduler: the same workflow type and ID, neither the pause
	// signal's channel nor the paused query.
	w := worker.New(c.Temporal, temporal.AdminQueue(id), worker.Options{})
	w.RegisterWorkflowWithOptions(func(ctx sdkworkflow.Context, _ types.SchedulerInput) error {
		return sdkworkflow.Await(ctx, func() bool { return false })
	}, sdkworkflow.RegisterOptions{Name: temporal.SchedulerWorkflow})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	o := temporal.NewOptions(id, time.Minute)
	owned := chaindata.HeightRange{From: 1, To: 10}
	_, err := c.Temporal.ExecuteWorkflow(ctx, o.SchedulerStart(owned, string(types.IndexModeScheduler)),
		temporal.SchedulerWorkflow, types.SchedulerInput{ChainID: id, Head: owned.To, Remaining: []chaindata.HeightRange{owned}})
	require.NoError(t, err)

	res, err := c.EnsurePaused(ctx, id)
	require.NoError(t, err)
	require.Equal(t, lifecycle.SchedulerUnknown, res.Scheduler)
	require.False(t, res.Signalled)
	require.NotNil(t, res.Unanswered)
	require.True(t, res.Unanswered.PredatesPause(), "%v", res.Unanswered)
	require.Equal(t, [2]int{allSchedules, allSchedules}, schedulesPaused(t, c.Temporal, id))
	require.Empty(t, pauseSignals(t, c.Temporal, id))
}

// A scheduler whose workers are all gone does not answer either: after
// AskTimeout it is left unsignalled, the result says why (not one from
// before pausing: the workers ask again when they are back).
func TestASchedulerNoWorkerAnswersIsNotSignalled(t *testing.T) {
	const id = "lc-noworker"
	ctx := testContext(t)
	c, _ := newChains(t)
	createSchedules(t, c.Temporal, id, false)
	runScheduler(t, c.Temporal, id, false).Stop()

	began := time.Now()
	res, err := c.EnsurePaused(ctx, id)
	require.NoError(t, err)
	require.Less(t, time.Since(began), lifecycle.AskTimeout+5*time.Second, "the question is bounded")
	require.Equal(t, lifecycle.SchedulerUnknown, res.Scheduler)
	require.NotNil(t, res.Unanswered)
	require.False(t, res.Unanswered.PredatesPause(), "%v", res.Unanswered)
	require.Empty(t, pauseSignals(t, c.Temporal, id))
	require.Equal(t, [2]int{allSchedules, allSchedules}, schedulesPaused(t, c.Temporal, id))
}

// The Temporal calls of a step are bounded by CallTimeout: a step that
// runs out fails, naming the step, and the scheduler is still asked.
func TestAStepOutOfTimeFailsNamingIt(t *testing.T) {
	const id = "lc-slow"
	c, _ := newChains(t)
	createSchedules(t, c.Temporal, id, false)
	c.CallTimeout = time.Nanosecond
	res, err := c.EnsurePaused(context.Background(), id)
	require.Equal(t, []lifecycle.Step{lifecycle.StepSchedules, lifecycle.StepAsk}, failedSteps(err))
	require.Equal(t, lifecycle.SchedulerUnknown, res.Scheduler)
	require.False(t, res.Signalled)
}
