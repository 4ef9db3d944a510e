package integration

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// priorityProbeActivity is the activity the probe workflow runs; its one
// execution slot is where the order is measured.
const priorityProbeActivity = "PriorityProbeRecord"

// orderLog records heights in the order something served them.
type orderLog struct {
	mu  sync.Mutex
	seq []uint64
}

func (l *orderLog) add(h uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq = append(l.seq, h)
}

func (l *orderLog) snapshot() []uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]uint64(nil), l.seq...)
}

// priorityOrder summarises an observed order against the two classes.
type priorityOrder struct {
	// LowBeforeLastHigh counts UltraLow items served before the last
	// UltraHigh one: 0 when priority is honoured, N under FIFO.
	LowBeforeLastHigh int
	// HighsInFirstN counts UltraHigh items among the first N served.
	HighsInFirstN int
	// LastHighPos is the 0-based position of the last UltraHigh item.
	LastHighPos int
}

func summarise(seq []uint64, isHigh func(uint64) bool, n int) priorityOrder {
	var o priorityOrder
	lows := 0
	for i, h := range seq {
		if isHigh(h) {
			o.LowBeforeLastHigh = lows
			o.LastHighPos = i
			if i < n {
				o.HighsInFirstN++
			}
		} else {
			lows++
		}
	}
	return o
}

// backlog reads the server's backlog of a task queue, in total and per
// priority key (the per-key map is empty if the server does not report it).
func backlog(t *testing.T, tc client.Client, queue string, typ enumspb.TaskQueueType) (int64, map[int32]int64) {
	t.Helper()
	resp, err := tc.WorkflowService().DescribeTaskQueue(context.Background(), &workflowservice.DescribeTaskQueueRequest{
		Namespace:     "default",
		TaskQueue:     &taskqueuepb.TaskQueue{Name: queue, Kind: enumspb.TASK_QUEUE_KIND_NORMAL},
		TaskQueueType: typ,
		ReportStats:   true,
	})
	require.NoError(t, err)
	per := map[int32]int64{}
	for k, s := range resp.GetStatsByPriorityKey() {
		per[k] = s.GetApproximateBacklogCount()
	}
	return resp.GetStats().GetApproximateBacklogCount(), per
}

// With a backlog on a task queue and a single execution slot, Ultra High
// work (Temporal PriorityKey 1) is served before Ultra Low work (PriorityKey
// 5) that was enqueued earlier. The options are the production ones
// (temporal.Options.IndexBlockStart, hence types.PriorityLevel.PriorityKey), and the
// workflow type is the production IndexBlock name on the production index
// queue of a chain no worker serves; only its body is a probe that records
// the order. Nothing polls while the backlog is built. Temporal orders by
// priority within a task queue partition; localstack runs the dev server
// with one partition per queue (with the default 4, this test measured 10
// and 15 of 30 Ultra Low tasks served before the last Ultra High one).
//
// The order is measured at two points:
//   - workflow tasks: the server's WorkflowTaskStarted time of each run
//     (the SDK refuses fewer than 2 workflow-task slots and pollers, so the
//     in-process order of 2 concurrent tasks may swap a neighbouring pair;
//     the server's dispatch order cannot);
//   - activities: the probe's activity inherits the workflow's priority; its
//     tasks are all backlogged before a worker with exactly one activity
//     slot and one poller starts, so that order is exact.
func TestPriorityUltraHighServedBeforeUltraLow(t *testing.T) {
	const chainID = "it-priority"
	const n = 30
	const lowBase, highBase = 1000, 2000
	isHigh := func(h uint64) bool { return h >= highBase }

	// The production mapping, named by level.
	require.Equal(t, 1, types.UltraHigh.PriorityKey())
	require.Equal(t, 5, types.UltraLow.PriorityKey())

	// The SDK's default logger writes every activity at debug level.
	tc, err := client.Dial(client.Options{
		HostPort: stack.temporal.HostPort, Namespace: "default",
		Logger: temporal.NewLogger(zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))),
	})
	require.NoError(t, err)
	t.Cleanup(tc.Close)
	opts := temporal.NewOptions(chainID, chainConfig(chainID, "http://127.0.0.1:1").Chains[chainID].Index.ActivityTimeout)
	queue := temporal.IndexQueue(chainID)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// 1. Backlog: all Ultra Low first, then all Ultra High, nobody polling.
	var enqueued []uint64
	var runs []client.WorkflowRun
	start := func(h uint64, level types.PriorityLevel) {
		o := opts.IndexBlockStart(h, level.PriorityKey(), string(types.IndexModeScheduler))
		require.Equal(t, queue, o.TaskQueue)
		run, err := tc.ExecuteWorkflow(ctx, o, temporal.IndexBlockWorkflow, types.IndexBlockInput{ChainID: chainID, Height: h})
		require.NoError(t, err)
		runs = append(runs, run)
		enqueued = append(enqueued, h)
	}
	for i := uint64(0); i < n; i++ {
		start(lowBase+i, types.UltraLow)
	}
	for i := uint64(0); i < n; i++ {
		start(highBase+i, types.UltraHigh)
	}
	// The key reached the server with each run.
	for _, h := range enqueued {
		level := types.UltraLow
		if isHigh(h) {
			level = types.UltraHigh
		}
		d, err := tc.DescribeWorkflowExecution(ctx, temporal.IndexBlockID(chainID, h), "")
		require.NoError(t, err)
		require.Equal(t, int32(level.PriorityKey()), d.GetWorkflowExecutionInfo().GetPriority().GetPriorityKey(),
			"height %d priority key on the server", h)
	}
	// Starting a run returns before history hands its first workflow task to
	// matching: wait until the whole backlog is there, per key if the server
	// reports it, so the worker cannot see a partial backlog.
	waitFor(t, time.Minute, "workflow task backlog complete", func() (bool, string) {
		total, per := backlog(t, tc, queue, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
		ok := total == 2*n
		if len(per) > 0 {
			ok = ok && per[1] == n && per[5] == n
		}
		return ok, fmt.Sprintf("total=%d per_key=%v", total, per)
	})
	wftTotal, wftPer := backlog(t, tc, queue, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
	t.Logf("workflow task backlog before any poll: total=%d per_key=%v", wftTotal, wftPer)

	// 2. A workflow-only worker with the fewest slots and pollers the SDK
	// allows (it panics on 1). Its tasks schedule one activity each; no
	// activity worker polls yet, so those queue up too.
	var wfOrder, actOrder orderLog
	probe := func(ctx workflow.Context, in types.IndexBlockInput) (types.IndexBlockResult, error) {
		if !workflow.IsReplaying(ctx) {
			wfOrder.add(in.Height)
		}
		actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 30 * time.Second})
		return types.IndexBlockResult{}, workflow.ExecuteActivity(actx, priorityProbeActivity, in).Get(actx, nil)
	}
	wfWorker := worker.New(tc, queue, worker.Options{
		MaxConcurrentWorkflowTaskExecutionSize: 2,
		MaxConcurrentWorkflowTaskPollers:       2,
		LocalActivityWorkerOnly:                true,
		DisableEagerActivities:                 true,
	})
	wfWorker.RegisterWorkflowWithOptions(probe, workflow.RegisterOptions{Name: temporal.IndexBlockWorkflow})
	require.NoError(t, wfWorker.Start())
	t.Cleanup(wfWorker.Stop)
	waitFor(t, time.Minute, "every probe workflow ran its first task", func() (bool, string) {
		got := len(wfOrder.snapshot())
		return got == 2*n, fmt.Sprintf("%d of %d", got, 2*n)
	})
	waitFor(t, time.Minute, "activity backlog complete", func() (bool, string) {
		total, per := backlog(t, tc, queue, enumspb.TASK_QUEUE_TYPE_ACTIVITY)
		ok := total == 2*n
		if len(per) > 0 {
			ok = ok && per[1] == n && per[5] == n
		}
		return ok, fmt.Sprintf("total=%d per_key=%v", total, per)
	})
	actTotal, actPer := backlog(t, tc, queue, enumspb.TASK_QUEUE_TYPE_ACTIVITY)
	t.Logf("activity backlog before any poll: total=%d per_key=%v (priority inherited from the workflow)", actTotal, actPer)

	// 3. An activity-only worker with one slot and one poller.
	actWorker := worker.New(tc, queue, worker.Options{
		DisableWorkflowWorker:              true,
		MaxConcurrentActivityExecutionSize: 1,
		MaxConcurrentActivityTaskPollers:   1,
	})
	actWorker.RegisterActivityWithOptions(func(_ context.Context, in types.IndexBlockInput) error {
		actOrder.add(in.Height)
		return nil
	}, activity.RegisterOptions{Name: priorityProbeActivity})
	require.NoError(t, actWorker.Start())
	t.Cleanup(actWorker.Stop)
	for _, run := range runs {
		require.NoError(t, run.Get(ctx, nil))
	}

	// The server's dispatch order of the first workflow tasks.
	type started struct {
		h  uint64
		at time.Time
	}
	var dispatch []started
	for _, h := range enqueued {
		iter := tc.GetWorkflowHistory(ctx, temporal.IndexBlockID(chainID, h), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for iter.HasNext() {
			ev, err := iter.Next()
			require.NoError(t, err)
			if ev.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED {
				dispatch = append(dispatch, started{h, ev.GetEventTime().AsTime()})
				break
			}
		}
	}
	require.Len(t, dispatch, 2*n)
	sort.SliceStable(dispatch, func(i, j int) bool { return dispatch[i].at.Before(dispatch[j].at) })
	serverWF := make([]uint64, len(dispatch))
	for i, d := range dispatch {
		serverWF[i] = d.h
	}

	sw := summarise(serverWF, isHigh, n)
	iw := summarise(wfOrder.snapshot(), isHigh, n)
	acts := actOrder.snapshot()
	require.Len(t, acts, 2*n, "each activity ran once")
	ac := summarise(acts, isHigh, n)
	t.Logf("workflow tasks, server dispatch order: %+v\n  %v", sw, serverWF)
	t.Logf("workflow tasks, in-process order (2 slots): %+v\n  %v", iw, wfOrder.snapshot())
	t.Logf("activities, single slot: %+v\n  %v", ac, acts)

	// Control: the order is not the enqueue order (all Ultra Low first), so
	// this test would fail on a server that ignores priority.
	require.NotEqual(t, enqueued, acts, "activities ran in enqueue (FIFO) order: priority ignored")
	require.NotEqual(t, enqueued, serverWF, "workflow tasks dispatched in enqueue (FIFO) order: priority ignored")
	require.True(t, isHigh(acts[0]), "first activity served is Ultra Low (%d)", acts[0])

	// Priority: every Ultra High item before any Ultra Low one.
	require.Zero(t, sw.LowBeforeLastHigh, "server dispatched Ultra Low workflow tasks before the last Ultra High one")
	require.Zero(t, ac.LowBeforeLastHigh, "Ultra Low activities ran before the last Ultra High one (single slot)")
	require.Equal(t, n, ac.HighsInFirstN)
	// In process, two task slots may finish a neighbouring pair out of
	// dispatch order: at most one Ultra Low can overtake the last Ultra High.
	require.LessOrEqual(t, iw.LowBeforeLastHigh, 1, "in-process workflow order")
}
