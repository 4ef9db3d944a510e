package lifecycle_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/tideline-dev/tideline/pkg/indexer/lifecycle"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/registry"
	"github.com/tideline-dev/tideline/pkg/storage"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// startIndexBlock starts an IndexBlock workflow of the chain on its index
// queue, where no worker polls here: a running workflow of the chain that
// a removal must terminate. It returns once the workflow is listed as
// running: a removal finds the chain's workflows in the visibility store,
// which the server fills after the start returns (on a loaded box the
// CI of fd8464e removed before it was listed, and found only the
// scheduler).
func startIndexBlock(t *testing.T, tc client.Client, id string, height uint64) string {
	t.Helper()
	ctx := testContext(t)
	o := temporal.NewOptions(id, time.Minute)
	r, err := tc.ExecuteWorkflow(ctx, o.IndexBlockStart(height, types.UltraHigh.PriorityKey(), string(types.IndexModeDirect)),
		temporal.IndexBlockWorkflow, types.IndexBlockInput{ChainID: id, Height: height})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		resp, err := tc.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query: fmt.Sprintf("WorkflowId = '%s' AND ExecutionStatus = 'Running'", r.GetID()),
		})
		return err == nil && len(resp.GetExecutions()) == 1
	}, time.Minute, 20*time.Millisecond, "%s listed as running", r.GetID())
	return r.GetID()
}

// rowsOf sums the chain's rows over every table.
func rowsOf(t *testing.T, store *storage.ClickHouse, id string) uint64 {
	t.Helper()
	rows, err := store.Records().ChainRows(testContext(t), id)
	require.NoError(t, err)
	var n uint64
	for _, r := range rows {
		n += r
	}
	return n
}

// A removal planned first changes nothing; then done, with the data: the
// state stored, the Schedules deleted, the scheduler and every other
// running workflow of the chain terminated, its rows deleted and another
// chain's kept. Done again (a removal may be finished again), it finds
// nothing left.
func TestRemovePlannedThenDone(t *testing.T) {
	const id, other = "lc-remove", "lc-remove-other"
	ctx := testContext(t)
	c, store := newChains(t)
	addChain(t, c, id, registry.Paused)
	addChain(t, c, other, registry.Active)
	createSchedules(t, c.Temporal, id, true)
	runScheduler(t, c.Temporal, id, true)
	indexing := startIndexBlock(t, c.Temporal, id, 7)
	require.NoError(t, store.SaveState(ctx, id, storage.StateWatermark, 7))
	require.NoError(t, store.SaveState(ctx, other, storage.StateWatermark, 9))
	otherRows := rowsOf(t, store, other)
	require.Positive(t, otherRows)

	plan, err := c.PlanRemove(ctx, id, true)
	require.NoError(t, err)
	require.Equal(t, temporal.ScheduleIDs(id), plan.Schedules)
	require.Equal(t, []string{temporal.SchedulerID(id), indexing}, plan.Workflows, "the scheduler first")
	require.Equal(t, uint64(1), plan.Rows["chain_state"])
	require.Empty(t, plan.Tables)
	require.Equal(t, registry.Paused, storedState(t, c, id).State, "a plan changes nothing")
	require.Equal(t, [2]int{allSchedules, allSchedules}, schedulesPaused(t, c.Temporal, id))
	kept, err := c.PlanRemove(ctx, id, false)
	require.NoError(t, err)
	require.Nil(t, kept.Rows, "rows are counted only when they would go")

	res, err := c.Remove(ctx, id, true)
	require.NoError(t, err)
	require.True(t, res.Stored)
	require.Equal(t, plan.Schedules, res.Schedules)
	require.Equal(t, plan.Workflows, res.Workflows)
	require.Contains(t, res.Tables, "chain_state")
	require.NoError(t, c.WaitRowsDeleted(ctx, time.Minute))
	require.Zero(t, rowsOf(t, store, id))
	require.Equal(t, otherRows, rowsOf(t, store, other), "another chain's rows are kept")
	d := storedState(t, c, id)
	require.Equal(t, registry.Removed, d.State)
	require.True(t, d.DropData)
	require.Equal(t, [2]int{0, 0}, schedulesPaused(t, c.Temporal, id))
	left, err := temporal.RemoveChain(ctx, c.Temporal, "default", id, true)
	require.NoError(t, err)
	require.Empty(t, left.Workflows)

	again, err := c.Remove(ctx, id, true)
	require.NoError(t, err)
	require.Equal(t, lifecycle.Removal{ChainID: id, DropData: true, Tables: res.Tables}, again)
}

// Remove refuses what PlanRemove refuses, with the registry's typed
// errors, before touching anything.
func TestRemoveRefusesWhatIsNotTheRegistrys(t *testing.T) {
	const fileID = "lc-remove-file"
	ctx := testContext(t)
	c, _ := newChains(t, fileID)
	createSchedules(t, c.Temporal, fileID, false)
	for _, remove := range []func(context.Context, string, bool) (lifecycle.Removal, error){c.PlanRemove, c.Remove} {
		_, err := remove(ctx, fileID, true)
		var inFile *registry.DeclaredInFileError
		require.ErrorAs(t, err, &inFile)
		_, err = remove(ctx, "lc-remove-unknown", false)
		var notFound *registry.NotFoundError
		require.ErrorAs(t, err, &notFound)
	}
	require.Equal(t, [2]int{allSchedules, 0}, schedulesPaused(t, c.Temporal, fileID), "the file's chain is untouched")
}

// A worker's sweep deletes the rows even when Temporal could not be
// cleared (here: out of time), and says which step failed.
func TestSweepDeletesTheRowsWhenTemporalFails(t *testing.T) {
	const id = "lc-sweep"
	ctx := testContext(t)
	c, store := newChains(t)
	createSchedules(t, c.Temporal, id, false)
	require.NoError(t, store.SaveState(ctx, id, storage.StateWatermark, 3))
	c.CallTimeout = time.Nanosecond
	res, err := c.Sweep(ctx, id, true)
	require.Equal(t, []lifecycle.Step{lifecycle.StepTemporal}, failedSteps(err))
	require.Contains(t, res.Tables, "chain_state")
	require.NoError(t, c.WaitRowsDeleted(ctx, time.Minute))
	require.Zero(t, rowsOf(t, store, id))
	require.Equal(t, [2]int{allSchedules, 0}, schedulesPaused(t, c.Temporal, id), "its Schedules are left for the next sweep")
}

// A worker that sees the stored removal first sweeps the chain before the
// command does: the command still reports every Schedule and workflow the
// chain had, not only what its own sweep found left.
func TestRemoveCountsWhatAWorkersSweepTookFirst(t *testing.T) {
	const id = "lc-remove-race"
	ctx := testContext(t)
	c, _ := newChains(t)
	addChain(t, c, id, registry.Active)
	createSchedules(t, c.Temporal, id, false)
	runScheduler(t, c.Temporal, id, false)
	indexing := startIndexBlock(t, c.Temporal, id, 5)
	var swept lifecycle.Removal
	lifecycle.SetAfterStore(c, func() {
		var err error
		swept, err = c.Sweep(ctx, id, false)
		require.NoError(t, err)
	})

	res, err := c.Remove(ctx, id, false)
	require.NoError(t, err)
	require.Equal(t, temporal.ScheduleIDs(id), swept.Schedules, "the worker's sweep took every Schedule")
	require.Equal(t, temporal.ScheduleIDs(id), res.Schedules)
	require.Equal(t, []string{temporal.SchedulerID(id), indexing}, res.Workflows, "the scheduler first")
	require.Equal(t, [2]int{0, 0}, schedulesPaused(t, c.Temporal, id))
}
