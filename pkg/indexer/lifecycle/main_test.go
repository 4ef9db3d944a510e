package lifecycle_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	sdkworkflow "go.temporal.io/sdk/workflow"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/internal/testkit"
	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/indexer/jobs/aggregate"
	"github.com/tideline-dev/tideline/pkg/indexer/jobs/retention"
	"github.com/tideline-dev/tideline/pkg/indexer/jobs/streamappend"
	"github.com/tideline-dev/tideline/pkg/indexer/jobs/tokenmeta"
	"github.com/tideline-dev/tideline/pkg/indexer/jobs/tracebackfill"
	"github.com/tideline-dev/tideline/pkg/indexer/lifecycle"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/indexer/workflow"
	"github.com/tideline-dev/tideline/pkg/localstack"
	"github.com/tideline-dev/tideline/pkg/registry"
	"github.com/tideline-dev/tideline/pkg/storage"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// The lifecycle runs against a real Temporal dev server and a real
// ClickHouse (the registry and the rows), both started once here.
var (
	temporalServer *localstack.Temporal
	clickhouse     *localstack.ClickHouse
)

// TestMain starts both; a missing binary fails the run.
func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "tideline-lifecycle-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "lifecycle tests:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	temporalServer, err = localstack.StartTemporal(dir, localstack.TemporalOptions{NoUI: true, SearchAttributes: temporal.SearchAttributeSpecs()})
	if err != nil {
		fmt.Fprintln(os.Stderr, "lifecycle tests need a real Temporal dev server:", err)
		return 1
	}
	defer temporalServer.Stop()
	return testkit.RunWithClickHouse(m, "lifecycle", &clickhouse)
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// newChains is the lifecycle over a database of the test's own (migrated,
// with its registry) and the dev server; file holds the IDs of the config
// file's chains.
func newChains(t *testing.T, file ...string) (*lifecycle.Chains, *storage.ClickHouse) {
	t.Helper()
	ctx := testContext(t)
	store, err := storage.Open(ctx, config.ClickHouse{Addr: clickhouse.Addr, Protocol: clickhouse.Protocol, Database: testkit.Database(t, "l_"), QueryTimeout: time.Minute}, zap.NewNop())
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	require.NoError(t, store.Migrate(ctx))
	tc, err := temporal.Dial(ctx, config.Temporal{HostPort: temporalServer.HostPort, Namespace: "default"}, zap.NewNop())
	require.NoError(t, err)
	t.Cleanup(tc.Close)
	files := map[string]config.Chain{}
	for _, id := range file {
		files[id] = config.DefaultChain()
	}
	return &lifecycle.Chains{
		Temporal: tc, Namespace: "default", Rows: store.Records(),
		Registry: &registry.Registry{Store: store.Records(), File: files, PollInterval: time.Second},
	}, store
}

// addChain stores a chain of the registry in state; its settings do not
// matter here.
func addChain(t *testing.T, c *lifecycle.Chains, id string, state registry.State) {
	t.Helper()
	_, err := c.Registry.Add(testContext(t), id, map[string]any{"block_time": "1s"}, state)
	require.NoError(t, err)
}

// storedState is the chain's state in the registry.
func storedState(t *testing.T, c *lifecycle.Chains, id string) registry.Definition {
	t.Helper()
	d, found, err := c.Registry.Get(testContext(t), id)
	require.NoError(t, err)
	require.True(t, found)
	return d
}

// allSchedules is how many Schedules createSchedules makes: every kind a
// chain may have (temporal.ScheduleIDs).
var allSchedules = len(temporal.ScheduleIDs("any"))

// createSchedules creates every Schedule a chain may have as a worker does
// (hourly, the stream's every minute: none fires during a test), paused or not, and removes
// everything of the chain from Temporal when the test ends.
func createSchedules(t *testing.T, tc client.Client, id string, paused bool) {
	t.Helper()
	ctx := testContext(t)
	o := temporal.NewOptions(id, time.Minute)
	for _, p := range []temporal.PeriodicWorkflow{
		o.HeadScanSchedule(time.Hour, string(types.IndexModeDirect), types.HeadScanInput{ChainID: id}),
		o.GapScanSchedule(time.Hour, string(types.IndexModeGap), types.GapScanInput{ChainID: id}),
		aggregate.Schedule(o, time.Hour),
		retention.Schedule(o, time.Hour),
		tokenmeta.Schedule(o),
		tracebackfill.Schedule(o, time.Hour),
		streamappend.Schedule(o),
	} {
		// Created paused, so that none fires at once (a new Schedule
		// does), then unpaused if asked; an hour apart at least, so that
		// none fires during a test either: token metadata's own interval
		// (tokenmeta.Interval, 10 s) once started a run in the middle of
		// TestRemoveCountsWhatAWorkersSweepTookFirst, which then counted
		// it among the chain's workflows.
		p.Paused = true
		p.Every = max(p.Every, time.Hour)
		require.NoError(t, temporal.EnsureSchedule(ctx, tc, p))
	}
	if !paused {
		_, err := temporal.SetSchedulesPaused(ctx, tc, id, false)
		require.NoError(t, err)
	}
	t.Cleanup(func() {
		_, err := temporal.RemoveChain(context.Background(), tc, "default", id, false)
		require.NoError(t, err)
	})
}

// schedulesPaused is [exist, paused] of the chain's Schedules.
func schedulesPaused(t *testing.T, tc client.Client, id string) [2]int {
	t.Helper()
	exist, paused, err := temporal.SchedulesPaused(testContext(t), tc, id)
	require.NoError(t, err)
	return [2]int{exist, paused}
}

// nodeDown stands in for the scheduler's local activities (the node's
// head, the database's counts, the starts): each fails at once, without
// retries, so that the scheduler waits on a timer between tries, where it
// answers queries and takes signals at once, as it does between batches.
func nodeDown(context.Context, any) error {
	return sdktemporal.NewNonRetryableApplicationError("test: no node and no database here", "Unavailable", nil)
}

// runScheduler runs the chain's real SchedulerWorkflow over heights 1-500
// on a worker of the chain's admin queue, started paused (with the pause
// signal, as a pause may find it) or not, and returns its worker, which
// stops at the end of the test.
func runScheduler(t *testing.T, tc client.Client, id string, paused bool) worker.Worker {
	t.Helper()
	ch := config.DefaultChain()
	o := temporal.NewOptions(id, ch.Index.ActivityTimeout)
	wfs := &workflow.Workflows{Chain: workflow.NewChainSetup(o, ch)}
	w := worker.New(tc, temporal.AdminQueue(id), worker.Options{})
	w.RegisterWorkflowWithOptions(wfs.Scheduler, sdkworkflow.RegisterOptions{Name: temporal.SchedulerWorkflow})
	for _, name := range []string{"HeadHeight", "CountIndexed", "StartIndex", "StartRange"} {
		w.RegisterActivityWithOptions(nodeDown, activity.RegisterOptions{Name: name})
	}
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	startScheduler(t, tc, o, paused)
	return w
}

// startScheduler starts the chain's scheduler and waits until it answers.
func startScheduler(t *testing.T, tc client.Client, o temporal.Options, paused bool) {
	t.Helper()
	ctx := testContext(t)
	owned := chaindata.HeightRange{From: 1, To: 500}
	in := types.SchedulerInput{ChainID: o.ChainID, Head: owned.To, Remaining: []chaindata.HeightRange{owned}}
	start := o.SchedulerStart(owned, string(types.IndexModeScheduler))
	var err error
	if paused {
		start.WorkflowIDConflictPolicy = enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING
		start.WorkflowExecutionErrorWhenAlreadyStarted = false
		_, err = tc.SignalWithStartWorkflow(ctx, start.ID, temporal.SchedulerPauseSignal, true, start, temporal.SchedulerWorkflow, in)
	} else {
		_, err = tc.ExecuteWorkflow(ctx, start, temporal.SchedulerWorkflow, in)
	}
	require.NoError(t, err)
	t.Cleanup(func() { _ = tc.TerminateWorkflow(context.Background(), start.ID, "", "test over") })
	require.Eventually(t, func() bool {
		running, isPaused, err := temporal.SchedulerPaused(ctx, tc, o.ChainID)
		return err == nil && running && isPaused == paused
	}, time.Minute, 100*time.Millisecond, "the scheduler answers")
}

// pauseSignals are the pause signals the chain's scheduler received, in
// order, from its history.
func pauseSignals(t *testing.T, tc client.Client, id string) []bool {
	t.Helper()
	ctx := testContext(t)
	it := tc.GetWorkflowHistory(ctx, temporal.SchedulerID(id), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var out []bool
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		s := ev.GetWorkflowExecutionSignaledEventAttributes()
		if s == nil || s.GetSignalName() != temporal.SchedulerPauseSignal {
			continue
		}
		var paused bool
		require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(s.GetInput(), &paused))
		out = append(out, paused)
	}
	return out
}

// failedSteps are the steps err says failed.
func failedSteps(err error) []lifecycle.Step {
	var out []lifecycle.Step
	for _, f := range lifecycle.Failures(err) {
		out = append(out, f.Step)
	}
	return out
}

// The failures of a joined error are found one by one, in order; a plain
// error holds none.
func TestFailuresListsEveryFailedStep(t *testing.T) {
	a := &lifecycle.Error{ChainID: "x", Step: lifecycle.StepTemporal, Err: errors.New("a")}
	b := &lifecycle.Error{ChainID: "x", Step: lifecycle.StepRows, Err: errors.New("b")}
	require.Equal(t, []lifecycle.Step{lifecycle.StepTemporal, lifecycle.StepRows}, failedSteps(errors.Join(a, nil, b)))
	require.Equal(t, []lifecycle.Step{lifecycle.StepRows}, failedSteps(fmt.Errorf("wrapped: %w", b)))
	require.Empty(t, failedSteps(errors.New("plain")))
	require.Empty(t, failedSteps(nil))
	require.ErrorIs(t, errors.Join(a, b), b.Err)
}
