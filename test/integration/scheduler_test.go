package integration

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/indexer/activity"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/loadgen"
	"github.com/tideline-dev/tideline/pkg/localstack"
	"github.com/tideline-dev/tideline/pkg/metrics"
	"github.com/tideline-dev/tideline/pkg/storage"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// maxSchedulerHistory is the seed's bound on one scheduler run's history.
const maxSchedulerHistory = 30_000

// schedulerRunInfo is one run of a chain's SchedulerWorkflow, as the server
// records it.
type schedulerRunInfo struct {
	RunID         string
	Status        enumspb.WorkflowExecutionStatus
	Start, Close  time.Time
	HistoryLength int64
	Events        int
	// ContinuedFrom is the run this one continues ("" for a run started by
	// a client); ContinuedTo is the run it continued as ("" if it did not).
	ContinuedFrom, ContinuedTo string
}

// schedulerRuns lists every run of the chain's scheduler from visibility
// and reads each run's history length and ContinueAsNew links.
func schedulerRuns(t *testing.T, tc client.Client, chainID string) []schedulerRunInfo {
	t.Helper()
	ctx := context.Background()
	id := temporal.SchedulerID(chainID)
	var out []schedulerRunInfo
	var token []byte
	for {
		resp, err := tc.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Namespace:     "default",
			Query:         fmt.Sprintf("WorkflowId = '%s'", id),
			NextPageToken: token,
		})
		require.NoError(t, err)
		for _, e := range resp.GetExecutions() {
			r := schedulerRunInfo{
				RunID:  e.GetExecution().GetRunId(),
				Status: e.GetStatus(),
				Start:  e.GetStartTime().AsTime(),
			}
			if e.GetCloseTime() != nil {
				r.Close = e.GetCloseTime().AsTime()
			}
			d, err := tc.DescribeWorkflowExecution(ctx, id, r.RunID)
			require.NoError(t, err)
			r.HistoryLength = d.GetWorkflowExecutionInfo().GetHistoryLength()
			iter := tc.GetWorkflowHistory(ctx, id, r.RunID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
			for iter.HasNext() {
				ev, err := iter.Next()
				require.NoError(t, err)
				r.Events++
				if a := ev.GetWorkflowExecutionStartedEventAttributes(); a != nil {
					r.ContinuedFrom = a.GetContinuedExecutionRunId()
				}
				if a := ev.GetWorkflowExecutionContinuedAsNewEventAttributes(); a != nil {
					r.ContinuedTo = a.GetNewExecutionRunId()
				}
			}
			out = append(out, r)
		}
		token = resp.GetNextPageToken()
		if len(token) == 0 {
			break
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Start.Before(out[j].Start) })
	return out
}

// requireOneChain asserts that the runs form one ContinueAsNew chain: one
// run started by a client, each other run continuing the one before it,
// none overlapping in time, all closed, the last one completed. It returns
// the largest history length seen.
func requireOneChain(t *testing.T, runs []schedulerRunInfo) int64 {
	t.Helper()
	require.NotEmpty(t, runs)
	for i, r := range runs {
		t.Logf("scheduler run %d: %s %s start=%s close=%s history=%d from=%q to=%q", i, r.RunID, r.Status,
			r.Start.Format("15:04:05.000"), r.Close.Format("15:04:05.000"), r.HistoryLength, r.ContinuedFrom, r.ContinuedTo)
	}
	var maxLen int64
	roots := 0
	for i, r := range runs {
		require.Less(t, r.HistoryLength, int64(maxSchedulerHistory), "run %d (%s) history", i, r.RunID)
		require.Equal(t, int64(r.Events), r.HistoryLength, "run %d: events read vs describe", i)
		maxLen = max(maxLen, r.HistoryLength)
		require.False(t, r.Close.IsZero(), "run %d (%s) still open", i, r.RunID)
		if r.ContinuedFrom == "" {
			roots++
		}
		if i == len(runs)-1 {
			require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, r.Status, "last run")
			require.Empty(t, r.ContinuedTo, "last run continued")
			continue
		}
		next := runs[i+1]
		require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW, r.Status, "run %d", i)
		require.Equal(t, next.RunID, r.ContinuedTo, "run %d continues as the next run", i)
		require.Equal(t, r.RunID, next.ContinuedFrom, "run %d continues run %d", i+1, i)
		require.False(t, next.Start.Before(r.Close), "run %d starts before run %d closed", i+1, i)
	}
	require.Equal(t, 1, roots, "scheduler chains started by a client (a second one would be a second scheduler)")
	return maxLen
}

// queryProgress asks the running scheduler for its progress; ok is false
// while there is no run to answer (not started yet, or between two runs).
func queryProgress(tc client.Client, chainID string) (temporal.SchedulerProgress, bool, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var p temporal.SchedulerProgress
	v, err := tc.QueryWorkflow(ctx, temporal.SchedulerID(chainID), "", temporal.SchedulerProgressQuery)
	if err != nil {
		return p, false, err.Error()
	}
	if err := v.Get(&p); err != nil {
		return p, false, err.Error()
	}
	return p, true, fmt.Sprintf("%+v", p)
}

// schedulerStatus is the status of the scheduler's current run.
func schedulerStatus(t *testing.T, tc client.Client, chainID string) enumspb.WorkflowExecutionStatus {
	t.Helper()
	d, err := tc.DescribeWorkflowExecution(context.Background(), temporal.SchedulerID(chainID), "")
	require.NoError(t, err)
	return d.GetWorkflowExecutionInfo().GetStatus()
}

// mineBacklog mines blocks empty blocks at once on anvil.
func mineBacklog(t *testing.T, url string, blocks uint64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	gen, err := loadgen.New(ctx, url, zap.NewNop(), loadgen.Config{PrivateKey: localstack.AnvilDefaultKey})
	require.NoError(t, err)
	defer gen.Close()
	require.NoError(t, gen.MineEmpty(ctx, blocks))
}

// catchupConfig is chainConfig with a scheduler that takes over from a
// backlog of `threshold` heights and continues as new every 500, at the
// given start rate and in-flight window. A one-minute block time makes a
// day 1,440 heights, so a backlog of a few thousand spans several buckets
// (TestSchedulerCatchesUpBacklogOnAnvil halves the day with two-minute
// blocks).
func catchupConfig(chainID, url string, threshold int, rate float64, maxInFlight int) *config.Config {
	cfg := chainConfig(chainID, url)
	ch := cfg.Chains[chainID]
	ch.BlockTime = time.Minute
	ch.HeadScan.CatchupThreshold = threshold
	ch.Scheduler.RateLimit = rate
	ch.Scheduler.BatchSize = 100
	ch.Scheduler.MaxInFlight = maxInFlight
	ch.Scheduler.ContinueAsNewAfter = continueAsNewAfter
	cfg.Chains[chainID] = ch
	return cfg
}

// catchUpTimeout bounds a catch-up. On 2 shared cores the stack indexed
// 9–17 heights/s with -race (13–28 without), so the backlogs here take
// 1–3 min; the rest is room for a loaded machine and for the index
// worker's pollers idling on the sticky queue (a stale sticky backlog hint
// parks both SDK pollers there until the long poll expires, up to a
// minute; waitCaughtUp logs it).
const catchUpTimeout = 6 * time.Minute

// deleteSchedulesAtEnd removes the chain's Schedules when the test ends, so
// that its HeadScan and GapScan stop firing on the shared server.
func deleteSchedulesAtEnd(t *testing.T, tc client.Client, chainID string) {
	t.Helper()
	t.Cleanup(func() {
		for _, id := range []string{temporal.HeadScanScheduleID(chainID), temporal.GapScanScheduleID(chainID)} {
			if err := tc.ScheduleClient().GetHandle(context.Background(), id).Delete(context.Background()); err != nil {
				t.Logf("delete schedule %s: %v", id, err)
			}
		}
	})
}

// continueAsNewAfter is the scheduler's run length in the tests.
const continueAsNewAfter = 500

// waitCaughtUp is waitIndexed that also logs progress every 10 s and, when
// nothing is indexed for 20 s, what the index queue holds and when its
// pollers last polled it, so a slow run shows where it stood.
func waitCaughtUp(t *testing.T, s *storage.ClickHouse, tc client.Client, chainID string, head uint64, timeout time.Duration) {
	t.Helper()
	began := time.Now()
	lastLog, lastChange := began, began
	var last uint64
	waitFor(t, timeout, fmt.Sprintf("%s indexed up to %d", chainID, head), func() (bool, string) {
		n, err := s.CountIndexed(context.Background(), chainID, []chaindata.HeightRange{{From: 0, To: head}})
		if err != nil {
			return false, err.Error()
		}
		wm, found, err := s.Watermark(context.Background(), chainID, 0)
		if err != nil {
			return false, err.Error()
		}
		state := fmt.Sprintf("indexed=%d of %d, watermark=%d found=%v", n[0], head+1, wm, found)
		if n[0] != last {
			last, lastChange = n[0], time.Now()
		} else if time.Since(lastChange) >= 20*time.Second {
			lastChange = time.Now()
			t.Logf("no progress for 20 s at %s: %s", state, indexQueueState(t, tc, chainID))
		}
		if time.Since(lastLog) >= 10*time.Second {
			lastLog = time.Now()
			t.Logf("%s after %s", state, time.Since(began).Round(time.Second))
		}
		return found && wm >= head, state
	})
}

// indexQueueState describes the chain's index queue: backlogs per priority
// key and how long ago each poller last polled the normal queue.
func indexQueueState(t *testing.T, tc client.Client, chainID string) string {
	t.Helper()
	queue := temporal.IndexQueue(chainID)
	wft, wftPer := backlog(t, tc, queue, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
	act, actPer := backlog(t, tc, queue, enumspb.TASK_QUEUE_TYPE_ACTIVITY)
	out := fmt.Sprintf("workflow task backlog %d %v, activity backlog %d %v", wft, wftPer, act, actPer)
	d, err := tc.WorkflowService().DescribeTaskQueue(context.Background(), &workflowservice.DescribeTaskQueueRequest{
		Namespace:     "default",
		TaskQueue:     &taskqueuepb.TaskQueue{Name: queue, Kind: enumspb.TASK_QUEUE_KIND_NORMAL},
		TaskQueueType: enumspb.TASK_QUEUE_TYPE_WORKFLOW,
	})
	require.NoError(t, err)
	for _, p := range d.GetPollers() {
		out += fmt.Sprintf("; poller %s last polled %s ago", p.GetIdentity(), time.Since(p.GetLastAccessTime().AsTime()).Round(100*time.Millisecond))
	}
	return out
}

func watermark(t *testing.T, s *storage.ClickHouse, chainID string) (uint64, bool) {
	t.Helper()
	wm, found, err := s.Watermark(context.Background(), chainID, 0)
	require.NoError(t, err)
	return wm, found
}

// A backlog on a real node goes HeadScan → SchedulerWorkflow (several
// ContinueAsNew runs, one chain, histories far below the limit) →
// IndexBlockWorkflows, and ends with every height indexed once, equal to
// the node. Hour-long blocks make a day 24 heights, so a backlog of 43
// heights spans two buckets: the claims are about the scheduler's
// buckets, runs and hand-overs, which heights past the second bucket
// would only repeat (the heights per second of a long catch-up are
// `make bench-catchup`'s).
func TestSchedulerCatchesUpBacklogOnAnvil(t *testing.T) {
	const chainID = "it-sched"
	const backlog = 20
	const runLength = 10 // heights a scheduler run starts before it continues as new
	node, err := localstack.StartAnvil(filepath.Join(stack.dir, chainID), localstack.AnvilOptions{})
	require.NoError(t, err)
	t.Cleanup(node.Stop)
	// Transactions with logs below and above the empty backlog, so that
	// more than one bucket holds real data.
	makeTraffic(t, node.HTTPURL, localstack.AnvilDefaultKey, 10)
	mineBacklog(t, node.HTTPURL, backlog)
	makeTraffic(t, node.HTTPURL, localstack.AnvilDefaultKey, 10)
	head := nodeHead(t, node.HTTPURL)
	require.GreaterOrEqual(t, head, uint64(backlog))

	store := openStore(t)
	tc := temporalClient(t)
	// A scheduler for any backlog above 20 heights, starting 5 a second in
	// batches of 5, so that it is seen mid-run and hands over every two
	// batches.
	cfg := catchupConfig(chainID, node.HTTPURL, 20, 5, 500)
	ch := cfg.Chains[chainID]
	ch.BlockTime = time.Hour
	ch.Scheduler.BatchSize = 5
	ch.Scheduler.ContinueAsNewAfter = runLength
	cfg.Chains[chainID] = ch
	heightsPerDay := uint64(24 * time.Hour / ch.BlockTime) // the High bucket's size
	require.Greater(t, head+1, heightsPerDay, "the backlog must reach past the first bucket")
	require.LessOrEqual(t, head+1, 2*heightsPerDay, "the backlog must end in the second bucket")
	opts := temporal.NewOptions(chainID, cfg.Chains[chainID].Index.ActivityTimeout)
	began := time.Now()
	runWorker(t, cfg)
	deleteSchedulesAtEnd(t, tc, chainID)

	// The progress query answers mid-run, for the whole backlog.
	var mid temporal.SchedulerProgress
	waitFor(t, time.Minute, "scheduler answers progress mid-run", func() (bool, string) {
		p, ok, state := queryProgress(tc, chainID)
		if ok {
			mid = p
		}
		return ok && p.Scheduled > 0 && p.Remaining > 0, state
	})
	t.Logf("progress mid-run: owned=%+v head=%d scheduled=%d remaining=%d runs=%d in_flight=%d rate=%.0f/s buckets=%+v",
		mid.Owned, mid.Head, mid.Scheduled, mid.Remaining, mid.Runs, mid.InFlight, mid.Rate, mid.Buckets)
	require.Equal(t, chaindata.HeightRange{From: 0, To: head}, mid.Owned, "nothing was indexed before: it owns [0, head]")
	require.Equal(t, head, mid.Head)
	require.Equal(t, head+1, mid.Scheduled+mid.Remaining)
	require.Len(t, mid.Buckets, 2)
	// Hour-long blocks: the newest 24 heights are under a day old (High),
	// the rest under two days (Medium).
	require.Equal(t, []temporal.BucketProgress{
		{Level: int(types.High), Name: types.High.String(), Total: heightsPerDay, Done: mid.Buckets[0].Done},
		{Level: int(types.Medium), Name: types.Medium.String(), Total: head + 1 - heightsPerDay, Done: mid.Buckets[1].Done},
	}, mid.Buckets)
	require.Equal(t, mid.Scheduled, mid.Buckets[0].Done+mid.Buckets[1].Done)

	// A second start while it runs is refused by Temporal: the fixed ID and
	// the production start options admit one scheduler per chain.
	_, err = tc.ExecuteWorkflow(context.Background(), opts.SchedulerStart(chaindata.HeightRange{From: 0, To: head}, string(types.IndexModeScheduler)), temporal.SchedulerWorkflow, types.SchedulerInput{
		ChainID: chainID, Head: head, Remaining: []chaindata.HeightRange{{From: 0, To: head}},
	})
	var already *serviceerror.WorkflowExecutionAlreadyStarted
	require.True(t, errors.As(err, &already), "second scheduler start: got %v", err)

	waitCaughtUp(t, store, tc, chainID, head, catchUpTimeout)
	elapsed := time.Since(began)
	requireSameChain(t, rawConn(t), nodeClient(t, node.HTTPURL), chainID, 0, head)

	waitFor(t, time.Minute, "scheduler finished", func() (bool, string) {
		s := schedulerStatus(t, tc, chainID)
		return s == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, s.String()
	})
	runs := waitRunsClosed(t, tc, chainID)
	maxLen := requireOneChain(t, runs)
	// A run hands over once it has started runLength heights (a batch may
	// overshoot: batches stop at bucket boundaries), so the chain has at
	// most one run per runLength heights, and at least two.
	require.GreaterOrEqual(t, len(runs), 2)
	require.LessOrEqual(t, len(runs), int((head+runLength)/runLength))
	// Every run, continued ones too, carries the search attributes and the
	// summary it was started with: an operator's query finds the chain's
	// scheduler whichever run is current.
	listedRuns := listWorkflows(t, fmt.Sprintf("WorkflowType = 'Scheduler' AND ChainID = '%s' AND IndexMode = 'scheduler' AND HeightFrom = 0 AND HeightTo = %d", chainID, head))
	require.Len(t, listedRuns, len(runs))
	for _, r := range listedRuns {
		require.Equal(t, fmt.Sprintf("catch-up of heights 0-%d of chain %s", head, chainID), r.Summary)
	}
	// The chain's carried state saw every height scheduled once.
	var res types.SchedulerResult
	last := runs[len(runs)-1]
	require.NoError(t, tc.GetWorkflow(context.Background(), temporal.SchedulerID(chainID), last.RunID).Get(context.Background(), &res))
	require.Equal(t, head+1, res.Scheduled, "heights scheduled over all runs")
	require.Equal(t, len(runs), res.Runs, "runs counted by the carried state")
	lens := make([]int64, len(runs))
	for i, r := range runs {
		lens[i] = r.HistoryLength
	}
	t.Logf("catch-up of %d heights: %s end to end, %.1f heights/s; scheduler runs=%d, history lengths=%v (max %d, limit %d)",
		head+1, elapsed.Round(time.Millisecond), float64(head+1)/elapsed.Seconds(), len(runs), lens, maxLen, maxSchedulerHistory)
}

// While the scheduler works through a backlog, blocks mined above its range
// are indexed by HeadScan directly, at Ultra High priority, long before the
// backlog below them is done.
func TestSchedulerLeavesLiveBlocksToHeadScan(t *testing.T) {
	const chainID = "it-sched-live"
	const backlog, live = 250, 5
	node, err := localstack.StartAnvil(filepath.Join(stack.dir, chainID), localstack.AnvilOptions{})
	require.NoError(t, err)
	t.Cleanup(node.Stop)
	mineBacklog(t, node.HTTPURL, backlog)
	head0 := nodeHead(t, node.HTTPURL)

	store := openStore(t)
	tc := temporalClient(t)
	// A scheduler that fills the index queue with the whole backlog in
	// seconds (250 in flight), so that the live heights must jump a full
	// queue, and that is still far from done when they come (the stack
	// indexes 9-28 heights a second, the lowest heights last). GapScan
	// runs once, at start: its minute-aligned runs would otherwise race
	// HeadScan for the live heights (it starts them too, at their age's
	// level), and this test is about HeadScan.
	cfg := catchupConfig(chainID, node.HTTPURL, 100, 100, 250)
	ch := cfg.Chains[chainID]
	ch.GapScan.Interval = time.Hour
	cfg.Chains[chainID] = ch
	runWorker(t, cfg)
	deleteSchedulesAtEnd(t, tc, chainID)
	var p temporal.SchedulerProgress
	waitFor(t, time.Minute, "scheduler running", func() (bool, string) {
		var ok bool
		var state string
		p, ok, state = queryProgress(tc, chainID)
		return ok && p.Scheduled > 0, state
	})
	require.Equal(t, chaindata.HeightRange{From: 0, To: head0}, p.Owned, "the scheduler owns [0, the head it started at]")

	mineBacklog(t, node.HTTPURL, live)
	mined := time.Now()
	newHeights := make([]uint64, live)
	for i := range newHeights {
		newHeights[i] = head0 + 1 + uint64(i)
	}
	require.Equal(t, newHeights[live-1], nodeHead(t, node.HTTPURL))
	waitFor(t, time.Minute, "live blocks indexed", func() (bool, string) {
		for _, h := range newHeights {
			ok, err := store.IsIndexed(context.Background(), chainID, h)
			if err != nil {
				return false, err.Error()
			}
			if !ok {
				return false, fmt.Sprintf("height %d not indexed", h)
			}
		}
		return true, ""
	})
	latency := time.Since(mined)
	// Read after all live heights were seen indexed: the backlog below them
	// was still not done.
	wm, found := watermark(t, store, chainID)
	status := schedulerStatus(t, tc, chainID)
	var p2 temporal.SchedulerProgress
	waitFor(t, time.Minute, "scheduler answers progress", func() (bool, string) {
		var ok bool
		var state string
		p2, ok, state = queryProgress(tc, chainID)
		return ok, state
	})
	t.Logf("live heights %v indexed %s after mining; then watermark=%d (found=%v), scheduler %s, progress scheduled=%d remaining=%d in_flight=%d",
		newHeights, latency.Round(time.Millisecond), wm, found, status, p2.Scheduled, p2.Remaining, p2.InFlight)
	require.True(t, !found || wm < head0, "backlog already done (watermark %d): the check proves nothing", wm)
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, status, "scheduler still running")
	require.Equal(t, head0, p2.Owned.To, "the live heights were never the scheduler's")
	require.Less(t, latency, 30*time.Second, "live heights must not wait behind the backlog")
	// They were started by HeadScan's direct path: Ultra High is the level
	// only HeadScan uses (the scheduler and GapScan start by age).
	for _, h := range newHeights {
		d, err := tc.DescribeWorkflowExecution(context.Background(), temporal.IndexBlockID(chainID, h), "")
		require.NoError(t, err)
		require.Equal(t, int32(types.UltraHigh.PriorityKey()), d.GetWorkflowExecutionInfo().GetPriority().GetPriorityKey(),
			"height %d priority key", h)
	}

	head := newHeights[live-1]
	waitCaughtUp(t, store, tc, chainID, head, catchUpTimeout)
	requireSameChain(t, rawConn(t), nodeClient(t, node.HTTPURL), chainID, 0, head)
	waitFor(t, time.Minute, "scheduler finished", func() (bool, string) {
		s := schedulerStatus(t, tc, chainID)
		return s == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, s.String()
	})
	requireOneChain(t, waitRunsClosed(t, tc, chainID))
}

// waitRunsClosed lists the scheduler's runs once visibility shows them all
// closed.
func waitRunsClosed(t *testing.T, tc client.Client, chainID string) []schedulerRunInfo {
	t.Helper()
	var runs []schedulerRunInfo
	waitFor(t, 30*time.Second, "visibility lists every run closed", func() (bool, string) {
		runs = schedulerRuns(t, tc, chainID)
		for _, r := range runs {
			if r.Close.IsZero() {
				return false, fmt.Sprintf("%d runs, %s open", len(runs), r.RunID)
			}
		}
		return len(runs) > 0, fmt.Sprintf("%d runs", len(runs))
	})
	return runs
}

// HeadScan's CheckScheduler must not depend on the scheduler answering its
// progress query: a scheduler whose workflow task is slow (a busy worker)
// or, here, that no worker runs at all, is still seen running with its
// owned range, read from the memo set at its start.
func TestCheckSchedulerReadsTheMemoWhenTheQueryCannotBeAnswered(t *testing.T) {
	const chainID = "it-no-admin-worker" // no worker polls its queues
	ctx := context.Background()
	tc := temporalClient(t)
	owned := chaindata.HeightRange{From: 10, To: 5_000}
	run, err := tc.ExecuteWorkflow(ctx, temporal.NewOptions(chainID, time.Minute).SchedulerStart(owned, string(types.IndexModeScheduler)), temporal.SchedulerWorkflow,
		types.SchedulerInput{ChainID: chainID, Head: owned.To, Remaining: []chaindata.HeightRange{owned}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = tc.TerminateWorkflow(ctx, run.GetID(), run.GetRunID(), "test over") })

	acts := &activity.Activities{
		Chain:    activity.ChainSetup{ID: chainID},
		Temporal: tc,
		Metrics:  metrics.New(prometheus.NewRegistry()),
		Log:      zap.NewNop(),
	}
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	st, err := acts.CheckScheduler(cctx, chainID)
	require.NoError(t, err)
	require.Equal(t, types.SchedulerStatus{Running: true, Owned: owned}, st)
}
