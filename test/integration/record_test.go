package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/loadgen"
	"github.com/tideline-dev/tideline/pkg/localstack"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// recordChainID is the chain the replay histories are recorded on; the
// replay test (pkg/indexer/workflow/replay_test.go) configures the same one.
const recordChainID = "replay"

// recordSettings are the chain settings the histories are recorded with.
// Workflows read them to decide their commands (threshold, batch sizes,
// rate, window, run length), so the replay test sets the same values
// (replayWorkflows there): small enough that a HeadScan starts a scheduler
// over 60 heights, the scheduler checks its in-flight window and continues
// as new once, and every history stays a few KB.
func recordSettings(ch config.Chain) config.Chain {
	ch.StartHeight = 0
	ch.BlockTime = time.Minute
	ch.HeadScan.CatchupThreshold = 20
	ch.HeadScan.BatchSize = 4
	ch.Scheduler.BatchSize = 10
	ch.Scheduler.RateLimit = 50
	ch.Scheduler.MaxInFlight = 20
	ch.Scheduler.ContinueAsNewAfter = 30
	// GapScan runs once, when its Schedule is created; the gap scenario
	// starts its own run.
	ch.GapScan.Interval = time.Hour
	return ch
}

// TestRecordReplayHistories records, from the real dev server, the
// workflow histories that pkg/indexer/workflow's replay test replays, and
// writes them as JSON (the format of `temporal workflow show -o json`)
// into the directory named by TIDELINE_RECORD_HISTORIES. It is an opt-in
// tool, run by hand when a workflow changes (see
// pkg/indexer/workflow/testdata/replay/README.md), not a test that is
// skipped in place of work: without the variable it has nothing to do.
//
// Scenarios, on one anvil chain and one worker:
//   - head 5, nothing indexed: a normal HeadScan starts the heights
//     directly (headscan-normal), each an IndexBlock (indexblock-index);
//   - 60 more heights: a HeadScan starts a Scheduler (headscan-start-scheduler),
//     which continues as new after 30 (scheduler-continue-as-new) and
//     finishes, draining, in the next run (scheduler-finish); HeadScan runs
//     meanwhile leave its range to it (headscan-scheduler-running);
//   - with the Schedules gone, 10 more heights of which the top 6 are
//     indexed: a GapScan finds the 4 below them (gapscan-gap);
//   - one more height started as push starts it, mode live, first run
//     only (indexblock-live);
//   - an IndexBlock of an indexed height returns at once
//     (indexblock-already-indexed);
//   - 40 more heights for a Scheduler started paused (the pause signal
//     with its start): it starts nothing until resumed, then continues as
//     new after 30 (scheduler-pause-resume, its first run).
func TestRecordReplayHistories(t *testing.T) {
	dir := os.Getenv("TIDELINE_RECORD_HISTORIES")
	if dir == "" {
		t.Skip("opt-in recorder: set TIDELINE_RECORD_HISTORIES=<dir> to record replay histories")
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	const chainID = recordChainID
	ctx := context.Background()
	node, err := localstack.StartAnvil(filepath.Join(stack.dir, chainID), localstack.AnvilOptions{})
	require.NoError(t, err)
	t.Cleanup(node.Stop)
	mine(t, node.HTTPURL, 5)
	require.Equal(t, uint64(5), nodeHead(t, node.HTTPURL))

	store := openStore(t)
	tc := temporalClient(t)
	cfg := chainConfig(chainID, node.HTTPURL)
	cfg.Chains[chainID] = recordSettings(cfg.Chains[chainID])
	runWorker(t, cfg)
	opts := temporal.NewOptions(chainID, cfg.Chains[chainID].Index.ActivityTimeout)

	// Normal mode.
	waitIndexed(t, store, chainID, 5, 2*time.Minute)
	id, run := findRun(t, tc, temporal.HeadScanWorkflow, func(r types.HeadScanResult) bool {
		return r.Mode == types.ModeNormal && r.Started > 0
	})
	writeHistory(t, tc, dir, "headscan-normal", id, run)
	id, run = findRun(t, tc, temporal.IndexBlockWorkflow, func(r types.IndexBlockResult) bool { return !r.AlreadyIndexed })
	writeHistory(t, tc, dir, "indexblock-index", id, run)

	// Catch-up: 60 heights over the threshold of 20.
	mine(t, node.HTTPURL, 60)
	waitFor(t, 5*time.Minute, "scheduler completed", func() (bool, string) {
		d, err := tc.DescribeWorkflowExecution(ctx, temporal.SchedulerID(chainID), "")
		if err != nil {
			return false, err.Error()
		}
		s := d.GetWorkflowExecutionInfo().GetStatus()
		return s == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, s.String()
	})
	waitIndexed(t, store, chainID, 65, 5*time.Minute)
	id, run = findRun(t, tc, temporal.HeadScanWorkflow, func(r types.HeadScanResult) bool { return r.SchedulerStarted })
	writeHistory(t, tc, dir, "headscan-start-scheduler", id, run)
	id, run = findRun(t, tc, temporal.HeadScanWorkflow, func(r types.HeadScanResult) bool {
		return r.Mode == types.ModeCatchup && !r.SchedulerStarted && r.Pending > 0
	})
	writeHistory(t, tc, dir, "headscan-scheduler-running", id, run)
	sched := listRuns(t, tc, fmt.Sprintf("WorkflowId = '%s'", temporal.SchedulerID(chainID)))
	require.Len(t, sched, 2, "scheduler runs: one continued as new, one finished")
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW, sched[0].status)
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, sched[1].status)
	writeHistory(t, tc, dir, "scheduler-continue-as-new", sched[0].id, sched[0].run)
	writeHistory(t, tc, dir, "scheduler-finish", sched[1].id, sched[1].run)

	// A gap: no scan may run while it is made.
	for _, s := range []string{temporal.HeadScanScheduleID(chainID), temporal.GapScanScheduleID(chainID)} {
		require.NoError(t, tc.ScheduleClient().GetHandle(ctx, s).Delete(ctx))
	}
	waitFor(t, time.Minute, "no scan running", func() (bool, string) {
		open := listRuns(t, tc, "ExecutionStatus = 'Running' AND (WorkflowType = 'HeadScan' OR WorkflowType = 'GapScan')")
		return len(open) == 0, fmt.Sprintf("%d open", len(open))
	})
	mine(t, node.HTTPURL, 10)
	var ib types.IndexBlockResult
	for h := uint64(70); h <= 75; h++ {
		r, err := tc.ExecuteWorkflow(ctx, opts.IndexBlockStart(h, types.UltraHigh.PriorityKey(), string(types.IndexModeDirect)), temporal.IndexBlockWorkflow,
			types.IndexBlockInput{ChainID: chainID, Height: h})
		require.NoError(t, err)
		require.NoError(t, r.Get(ctx, &ib))
	}
	gr, err := tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       temporal.GapScanWorkflowID(chainID) + "-recorded",
		TaskQueue:                temporal.AdminQueue(chainID),
		WorkflowExecutionTimeout: opts.ScanTimeout(),
	}, temporal.GapScanWorkflow, types.GapScanInput{ChainID: chainID})
	require.NoError(t, err)
	var gs types.GapScanResult
	require.NoError(t, gr.Get(ctx, &gs))
	require.Equal(t, types.GapScanResult{Head: 75, Missing: 4, Started: 4}, gs, "the gap 66..69")
	waitIndexed(t, store, chainID, 75, 2*time.Minute)
	writeHistory(t, tc, dir, "gapscan-gap", gr.GetID(), gr.GetRunID())

	// A live height: started as the push follower starts it (mode in the
	// input, first run only); a second such start is refused.
	mine(t, node.HTTPURL, 1)
	live := types.IndexBlockInput{ChainID: chainID, Height: 76, Mode: types.IndexModeLive}
	lr, err := tc.ExecuteWorkflow(ctx, opts.IndexBlockFirstStart(76, types.UltraHigh.PriorityKey(), string(types.IndexModeLive)),
		temporal.IndexBlockWorkflow, live)
	require.NoError(t, err)
	require.NoError(t, lr.Get(ctx, &ib))
	require.False(t, ib.AlreadyIndexed)
	_, err = tc.ExecuteWorkflow(ctx, opts.IndexBlockFirstStart(76, types.UltraHigh.PriorityKey(), string(types.IndexModeLive)),
		temporal.IndexBlockWorkflow, live)
	var already *serviceerror.WorkflowExecutionAlreadyStarted
	require.ErrorAs(t, err, &already, "a height push started once is not started again")
	writeHistory(t, tc, dir, "indexblock-live", lr.GetID(), lr.GetRunID())

	r, err := tc.ExecuteWorkflow(ctx, opts.IndexBlockStart(0, types.UltraHigh.PriorityKey(), string(types.IndexModeDirect)), temporal.IndexBlockWorkflow,
		types.IndexBlockInput{ChainID: chainID, Height: 0})
	require.NoError(t, err)
	require.NoError(t, r.Get(ctx, &ib))
	require.True(t, ib.AlreadyIndexed)
	writeHistory(t, tc, dir, "indexblock-already-indexed", r.GetID(), r.GetRunID())

	// A paused scheduler: started with the pause signal already sent (as
	// `indexer chain pause` may find it), it starts nothing until resumed,
	// then catches up as any other.
	// Its range starts above what the scenarios before indexed (the live
	// one indexed the head of its time).
	before, _, err := store.Watermark(ctx, chainID, 0)
	require.NoError(t, err)
	mine(t, node.HTTPURL, 40)
	owned := chaindata.HeightRange{From: before + 1, To: before + 40}
	start := opts.SchedulerStart(owned, string(types.IndexModeScheduler))
	// Signal-with-start takes no FAIL policy; no other scheduler runs here.
	start.WorkflowIDConflictPolicy = enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING
	start.WorkflowExecutionErrorWhenAlreadyStarted = false
	pr, err := tc.SignalWithStartWorkflow(ctx, temporal.SchedulerID(chainID), temporal.SchedulerPauseSignal, true,
		start, temporal.SchedulerWorkflow,
		types.SchedulerInput{ChainID: chainID, Head: owned.To, Remaining: []chaindata.HeightRange{owned}})
	require.NoError(t, err)
	waitFor(t, time.Minute, "the scheduler paused", func() (bool, string) {
		v, err := tc.QueryWorkflow(ctx, pr.GetID(), pr.GetRunID(), temporal.SchedulerPausedQuery)
		if err != nil {
			return false, err.Error()
		}
		var paused bool
		require.NoError(t, v.Get(&paused))
		return paused, "not paused"
	})
	wm, _, err := store.Watermark(ctx, chainID, 0)
	require.NoError(t, err)
	require.Equal(t, before, wm, "nothing indexed while paused")
	require.NoError(t, tc.SignalWorkflow(ctx, pr.GetID(), pr.GetRunID(), temporal.SchedulerPauseSignal, false))
	waitIndexed(t, store, chainID, owned.To, 2*time.Minute)
	waitFor(t, time.Minute, "the paused scheduler completed", func() (bool, string) {
		runs := listRuns(t, tc, fmt.Sprintf("WorkflowId = '%s'", pr.GetID()))
		last := runs[len(runs)-1] // the newest: the paused scheduler's last run
		return last.status == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, last.status.String()
	})
	writeHistory(t, tc, dir, "scheduler-pause-resume", pr.GetID(), pr.GetRunID())
}

// mine mines blocks empty blocks at once on anvil.
func mine(t *testing.T, url string, blocks uint64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	gen, err := loadgen.New(ctx, url, zap.NewNop(), loadgen.Config{PrivateKey: localstack.AnvilDefaultKey})
	require.NoError(t, err)
	defer gen.Close()
	require.NoError(t, gen.MineEmpty(ctx, blocks))
}

// recordedRun is one workflow run as visibility lists it.
type recordedRun struct {
	id, run string
	start   time.Time
	status  enumspb.WorkflowExecutionStatus
}

// listRuns lists the runs a visibility query matches, oldest first.
func listRuns(t *testing.T, tc client.Client, query string) []recordedRun {
	t.Helper()
	var out []recordedRun
	var token []byte
	for {
		resp, err := tc.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: "default", Query: query, NextPageToken: token,
		})
		require.NoError(t, err)
		for _, e := range resp.GetExecutions() {
			out = append(out, recordedRun{
				id: e.GetExecution().GetWorkflowId(), run: e.GetExecution().GetRunId(),
				start: e.GetStartTime().AsTime(), status: e.GetStatus(),
			})
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].start.Before(out[j].start) })
	return out
}

// findRun returns the oldest completed run of a workflow type whose result
// satisfies match.
func findRun[R any](t *testing.T, tc client.Client, workflowType string, match func(R) bool) (id, run string) {
	t.Helper()
	var found recordedRun
	waitFor(t, 30*time.Second, "a matching "+workflowType+" run", func() (bool, string) {
		runs := listRuns(t, tc, fmt.Sprintf("WorkflowType = '%s' AND ExecutionStatus = 'Completed'", workflowType))
		for _, r := range runs {
			var res R
			require.NoError(t, tc.GetWorkflow(context.Background(), r.id, r.run).Get(context.Background(), &res))
			if match(res) {
				found = r
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d completed runs, none matching", len(runs))
	})
	return found.id, found.run
}

// writeHistory writes a closed run's full history to dir/<name>.json.
func writeHistory(t *testing.T, tc client.Client, dir, name, id, run string) {
	t.Helper()
	h := &historypb.History{}
	iter := tc.GetWorkflowHistory(context.Background(), id, run, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		ev, err := iter.Next()
		require.NoError(t, err)
		h.Events = append(h.Events, ev)
	}
	b, err := temporalproto.CustomJSONMarshalOptions{Indent: "  "}.Marshal(h)
	require.NoError(t, err)
	path := filepath.Join(dir, name+".json")
	require.NoError(t, os.WriteFile(path, append(b, '\n'), 0o644))
	t.Logf("%s: %s/%s, %d events, %d bytes", path, id, run, len(h.Events), len(b))
}
