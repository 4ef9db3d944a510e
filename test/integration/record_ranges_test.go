package integration

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/indexer/jobs/aggregate"
	"github.com/tideline-dev/tideline/pkg/indexer/jobs/retention"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/localstack"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// recordRangeChainID is the chain of the range, aggregate, prune and
// mid-run pause histories; the replay test configures it with
// recordRangeSettings' values (replayRangeChain there).
const recordRangeChainID = "replay-range"

// recordRangeSettings index the backlog in ranges of 10 below the newest
// 4 heights, count aggregates and keep 50 heights, so that one short run
// records an IndexRange that writes, one that hands a poisoned height
// off, a Scheduler that starts both kinds, an Aggregate and a Prune run.
// HeightsPerSecond slows the scheduler so that it can be paused while it
// runs.
func recordRangeSettings(ch config.Chain) config.Chain {
	ch = recordSettings(ch)
	ch.ConfirmationDepth = 4
	ch.Scheduler.RangeSize = 10
	ch.Scheduler.SingleHeights = 4
	ch.Scheduler.MaxInFlight = 40
	ch.Scheduler.ContinueAsNewAfter = 200
	ch.Scheduler.HeightsPerSecond = 20
	ch.Aggregator.Interval = time.Second
	ch.Retention.KeepHeights = 50
	ch.Retention.Interval = time.Hour // runs when triggered
	return ch
}

// TestRecordReplayHistoriesRanges records, like TestRecordReplayHistories
// (the same opt-in variable), the histories of the workflows that one does
// not reach, on chain replay-range:
//   - 60 heights with height 25 poisoned (a malformed block until healed):
//     a Scheduler starts IndexRange workflows of 10 and the newest 4 as
//     IndexBlocks (scheduler-ranges), a range writes its heights
//     (indexrange-range), the poisoned height's range hands it off
//     (indexrange-handoff), and its own IndexBlock fails until healed
//     (indexblock-handed-off);
//   - the aggregator counts every height (aggregate-catchup), and retention
//     prunes below head-50 (prune-pruned);
//   - 120 more heights: the chain is paused while its Scheduler runs, as
//     pause and resume do it (Schedules paused, the scheduler signalled),
//     and resumed (scheduler-pause-midrun).
func TestRecordReplayHistoriesRanges(t *testing.T) {
	dir := os.Getenv("TIDELINE_RECORD_HISTORIES")
	if dir == "" {
		t.Skip("opt-in recorder: set TIDELINE_RECORD_HISTORIES=<dir> to record replay histories")
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	const chainID, poisoned = recordRangeChainID, 25
	ctx := context.Background()
	node, err := localstack.StartAnvil(filepath.Join(stack.dir, chainID), localstack.AnvilOptions{})
	require.NoError(t, err)
	t.Cleanup(node.Stop)
	mine(t, node.HTTPURL, 60)
	proxy := newPoisonProxy(node.HTTPURL, poisoned)
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)

	store := openStore(t)
	tc := temporalClient(t)
	cfg := chainConfig(chainID, srv.URL)
	cfg.Chains[chainID] = recordRangeSettings(cfg.Chains[chainID])
	runWorker(t, cfg)

	// Ranges, and a poisoned height handed off.
	handedOff := waitRun(t, tc, chainID, temporal.IndexRangeWorkflow, func(r types.IndexRangeWorkflowResult) bool { return r.HandedOff > 0 })
	waitFor(t, 2*time.Minute, "the handed-off height retried", func() (bool, string) {
		d, err := tc.DescribeWorkflowExecution(ctx, temporal.IndexBlockID(chainID, poisoned), "")
		if err != nil {
			return false, err.Error()
		}
		for _, pa := range d.GetPendingActivities() {
			if pa.GetAttempt() >= 2 {
				return true, ""
			}
		}
		return false, "no retried activity"
	})
	proxy.healed.Store(true)
	waitIndexed(t, store, chainID, 60, 2*time.Minute)
	wrote := waitRun(t, tc, chainID, temporal.IndexRangeWorkflow, func(r types.IndexRangeWorkflowResult) bool {
		return r.HandedOff == 0 && r.Indexed > 0
	})
	waitFor(t, time.Minute, "the scheduler completed", func() (bool, string) {
		s := schedulerStatus(t, tc, chainID)
		return s == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, s.String()
	})
	writeHistory(t, tc, dir, "indexrange-handoff", handedOff.id, handedOff.run)
	writeHistory(t, tc, dir, "indexrange-range", wrote.id, wrote.run)
	sched := workflowsOf(t, tc, chainID, temporal.SchedulerWorkflow)
	require.Len(t, sched, 1, "one scheduler run")
	writeHistory(t, tc, dir, "scheduler-ranges", sched[0].id, sched[0].run)
	poison := listRuns(t, tc, fmt.Sprintf("WorkflowId = '%s'", temporal.IndexBlockID(chainID, poisoned)))
	require.Len(t, poison, 1, "the handed-off height's workflow")
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, poison[0].status)
	writeHistory(t, tc, dir, "indexblock-handed-off", poison[0].id, poison[0].run)

	// The aggregator and retention.
	agg := waitRun(t, tc, chainID, temporal.AggregateWorkflow, func(r aggregate.Result) bool { return r.Counted > 0 && r.Height >= 60 })
	writeHistory(t, tc, dir, "aggregate-catchup", agg.id, agg.run)
	require.NoError(t, temporal.TriggerSchedule(ctx, tc, temporal.PruneScheduleID(chainID)))
	pr := waitRun(t, tc, chainID, temporal.PruneWorkflow, func(r retention.Result) bool { return r.Raised })
	writeHistory(t, tc, dir, "prune-pruned", pr.id, pr.run)

	// A pause while the scheduler runs: no Schedule may start a second one
	// while the first is recorded.
	mine(t, node.HTTPURL, 120)
	head := nodeHead(t, node.HTTPURL)
	waitFor(t, time.Minute, "a second scheduler running", func() (bool, string) {
		runs := workflowsOf(t, tc, chainID, temporal.SchedulerWorkflow)
		return len(runs) == 2 && runs[1].status == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, fmt.Sprintf("%d runs", len(runs))
	})
	_, err = temporal.SetSchedulesPaused(ctx, tc, chainID, true)
	require.NoError(t, err)
	running, err := temporal.SignalSchedulerPause(ctx, tc, chainID, true)
	require.NoError(t, err)
	require.True(t, running, "the scheduler ran when paused")
	waitFor(t, time.Minute, "the scheduler paused", func() (bool, string) {
		_, paused, err := temporal.SchedulerPaused(ctx, tc, chainID)
		if err != nil {
			return false, err.Error()
		}
		return paused, "not paused"
	})
	_, err = temporal.SetSchedulesPaused(ctx, tc, chainID, false)
	require.NoError(t, err)
	_, err = temporal.SignalSchedulerPause(ctx, tc, chainID, false)
	require.NoError(t, err)
	waitIndexed(t, store, chainID, head, 2*time.Minute)
	waitFor(t, time.Minute, "the paused scheduler completed", func() (bool, string) {
		s := schedulerStatus(t, tc, chainID)
		return s == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, s.String()
	})
	sched = workflowsOf(t, tc, chainID, temporal.SchedulerWorkflow)
	require.Len(t, sched, 2, "scheduler runs: the first catch-up and the paused one")
	writeHistory(t, tc, dir, "scheduler-pause-midrun", sched[1].id, sched[1].run)
}

// waitRun waits for the oldest completed run of a chain's workflow type
// whose result satisfies match.
func waitRun[R any](t *testing.T, tc client.Client, chainID, workflowType string, match func(R) bool) recordedRun {
	t.Helper()
	var found recordedRun
	waitFor(t, 2*time.Minute, "a matching "+workflowType+" run", func() (bool, string) {
		runs := workflowsOf(t, tc, chainID, workflowType)
		for _, r := range runs {
			if r.status != enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED {
				continue
			}
			var res R
			require.NoError(t, tc.GetWorkflow(context.Background(), r.id, r.run).Get(context.Background(), &res))
			if match(res) {
				found = r
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d runs, none matching", len(runs))
	})
	return found
}
