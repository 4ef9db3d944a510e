package temporal

import (
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/config"
)

// Options builds every workflow, activity and start option of one chain, so
// no workflow file holds an options literal. It holds what Temporal needs
// to know of the chain and nothing else: the chain's settings reach
// workflows and activities apart (pkg/indexer/workflow.Settings,
// pkg/indexer/activity.Chain). Built once per chain by the worker.
type Options struct {
	ChainID string
	// IndexTimeout is the start-to-close timeout of one IndexBlock
	// activity (index.activity_timeout).
	IndexTimeout time.Duration
	// IndexHeartbeat is its heartbeat timeout (index.heartbeat_timeout);
	// 0 sets none.
	IndexHeartbeat time.Duration
	// SearchAttributes says whether starts carry tideline's search
	// attributes (visibility.go). On by default; the worker turns it off
	// when the namespace lacks them and they could not be registered
	// (EnsureSearchAttributes), because the server refuses every start
	// that sets an unregistered one. Memos and summaries need no
	// registration and are always set.
	SearchAttributes bool
	// Retry holds the retry policy of each kind of activity (the chain's
	// retry.* settings).
	Retry config.Retries
}

// NewOptions returns the option builder of one chain, with search
// attributes on and the default retry policies.
func NewOptions(chainID string, indexTimeout time.Duration) Options {
	return Options{ChainID: chainID, IndexTimeout: indexTimeout, SearchAttributes: true, Retry: config.DefaultRetries()}
}

// ChainOptions is the option builder of a configured chain: its
// index.activity_timeout and its retry.* policies.
func ChainOptions(chainID string, ch config.Chain) Options {
	o := NewOptions(chainID, ch.Index.ActivityTimeout)
	o.IndexHeartbeat = ch.Index.HeartbeatTimeout
	o.Retry = ch.Retry
	return o
}

// RetryPolicy is Temporal's form of a configured policy (every job's
// activity options are built with it).
func RetryPolicy(p config.RetryPolicy) *sdktemporal.RetryPolicy {
	return &sdktemporal.RetryPolicy{
		InitialInterval:    p.InitialInterval,
		BackoffCoefficient: p.BackoffCoefficient,
		MaximumInterval:    p.MaximumInterval,
		MaximumAttempts:    int32(p.MaximumAttempts),
	}
}

// SummaryMemo is the memo key of the one-line description every workflow
// tideline starts carries ("height 123 of chain mainnet, live"); the same
// text is the workflow's summary in the Web UI.
const SummaryMemo = "summary"

// visibility is what a start shows of a workflow: search attributes
// (when the namespace has them), the summary memo and the UI summary.
type visibility struct {
	attrs   sdktemporal.SearchAttributes
	memo    map[string]any
	summary string
}

// describe builds the visibility of a workflow of this chain. heights is
// nil for a workflow without heights (the scans), priorityKey 0 for one
// running at the default priority.
func (o Options) describe(mode string, heights *chaindata.HeightRange, priorityKey int, summary string) visibility {
	v := visibility{memo: map[string]any{SummaryMemo: summary}, summary: summary}
	if !o.SearchAttributes {
		return v
	}
	updates := []sdktemporal.SearchAttributeUpdate{ChainIDKey.ValueSet(o.ChainID), IndexModeKey.ValueSet(mode)}
	if heights != nil {
		updates = append(updates, HeightFromKey.ValueSet(int64(heights.From)), HeightToKey.ValueSet(int64(heights.To)))
	}
	if priorityKey > 0 {
		updates = append(updates, PriorityKey.ValueSet(int64(priorityKey)))
	}
	v.attrs = sdktemporal.NewSearchAttributes(updates...)
	return v
}

// LocalActivity is for the fast calls a scan makes (head, watermark, starts):
// the seed's 20 s schedule-to-close; retry.local (by default 5 attempts,
// backoff 0.5 s → 5 s).
func (o Options) LocalActivity() workflow.LocalActivityOptions {
	return workflow.LocalActivityOptions{
		ScheduleToCloseTimeout: 20 * time.Second,
		RetryPolicy:            RetryPolicy(o.Retry.Local),
	}
}

// AdminActivity is for regular activities on the admin queue (calls to the
// Temporal API, such as the scheduler check).
func (o Options) AdminActivity() workflow.ActivityOptions {
	return workflow.ActivityOptions{
		TaskQueue:           AdminQueue(o.ChainID),
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         RetryPolicy(o.Retry.Admin),
	}
}

// IndexActivity is for fetching and writing one block. Attempts are
// unlimited: a height is never given up, only retried with backoff, so no
// height is skipped; a poisoned height shows in the activity's attempt count.
// The heartbeat timeout is how soon an attempt no worker runs any more (its
// worker died or stopped, or Temporal lost it) is tried again; the
// start-to-close timeout only bounds an attempt that is alive.
func (o Options) IndexActivity() workflow.ActivityOptions {
	return workflow.ActivityOptions{
		TaskQueue:           IndexQueue(o.ChainID),
		StartToCloseTimeout: o.IndexTimeout,
		HeartbeatTimeout:    o.IndexHeartbeat,
		RetryPolicy:         RetryPolicy(o.Retry.Index),
	}
}

// IndexBlockStart starts the IndexBlockWorkflow of one height, started by
// the indexing path mode (types.IndexMode: direct, scheduler, gap, range).
// The ID is fixed per height. While a run exists, a second start is
// refused with serviceerror.WorkflowExecutionAlreadyStarted (conflict
// policy fail, and the SDK told to report it instead of silently handing
// back the running run), which the caller counts as a duplicate. A
// finished height may be started again (the run then returns at once
// because the height is indexed): pull must be able to retry a height
// whose last run ended without indexing it. priorityKey is Temporal's (1
// = most urgent): types.PriorityLevel.PriorityKey makes it.
func (o Options) IndexBlockStart(height uint64, priorityKey int, mode string) client.StartWorkflowOptions {
	return o.indexBlockStart(height, priorityKey, mode, enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE)
}

// IndexBlockFirstStart starts the height's IndexBlockWorkflow only if the
// height never had a run (reuse policy reject duplicate): what the push
// source uses, so that followers in several workers, or a follower behind
// pull, start a height once between them, and a head announced again does
// not run its height twice. The refusal is
// serviceerror.WorkflowExecutionAlreadyStarted, as for IndexBlockStart.
// The start asks for eager execution: when the caller's process has an
// IndexBlock worker with a free slot (the follower runs in the worker),
// the server hands the first workflow task back in its answer instead of
// through the task queue, which takes a dispatch off a new head's latency.
func (o Options) IndexBlockFirstStart(height uint64, priorityKey int, mode string) client.StartWorkflowOptions {
	so := o.indexBlockStart(height, priorityKey, mode, enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE)
	so.EnableEagerStart = true
	return so
}

func (o Options) indexBlockStart(height uint64, priorityKey int, mode string, reuse enumspb.WorkflowIdReusePolicy) client.StartWorkflowOptions {
	v := o.describe(mode, &chaindata.HeightRange{From: height, To: height}, priorityKey,
		fmt.Sprintf("height %d of chain %s, %s, priority %d", height, o.ChainID, mode, priorityKey))
	return client.StartWorkflowOptions{
		ID:                                       IndexBlockID(o.ChainID, height),
		TaskQueue:                                IndexQueue(o.ChainID),
		WorkflowTaskTimeout:                      ShortTaskTimeout,
		WorkflowIDConflictPolicy:                 enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		WorkflowIDReusePolicy:                    reuse,
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		Priority:                                 sdktemporal.Priority{PriorityKey: priorityKey},
		TypedSearchAttributes:                    v.attrs,
		Memo:                                     v.memo,
		StaticSummary:                            v.summary,
	}
}

// RangeActivity is for one range of heights (the IndexRange activity) on
// the range queue. timeout bounds an attempt, heartbeat notices a dead
// worker; attempts are unlimited, as for a block: the activity resumes
// with the heights not yet indexed and hands heights that keep failing to
// their own IndexBlockWorkflow, so nothing is skipped.
func (o Options) RangeActivity(timeout, heartbeat time.Duration) workflow.ActivityOptions {
	return workflow.ActivityOptions{
		TaskQueue:           RangeQueue(o.ChainID),
		StartToCloseTimeout: timeout,
		HeartbeatTimeout:    heartbeat,
		RetryPolicy:         RetryPolicy(o.Retry.Range),
	}
}

// IndexRangeStart starts the IndexRange workflow of [from, to] on the
// range queue at the given Temporal priority key (mode: types.IndexMode
// range). As for a height, the ID is fixed: a retried start returns the
// running workflow, and a finished range may be started again (its
// activity then finds it indexed).
func (o Options) IndexRangeStart(from, to uint64, priorityKey int, mode string) client.StartWorkflowOptions {
	v := o.describe(mode, &chaindata.HeightRange{From: from, To: to}, priorityKey,
		fmt.Sprintf("heights %d-%d of chain %s, %s, priority %d", from, to, o.ChainID, mode, priorityKey))
	return client.StartWorkflowOptions{
		ID:                       IndexRangeID(o.ChainID, from, to),
		TaskQueue:                RangeQueue(o.ChainID),
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		Priority:                 sdktemporal.Priority{PriorityKey: priorityKey},
		TypedSearchAttributes:    v.attrs,
		Memo:                     v.memo,
		StaticSummary:            v.summary,
	}
}

// SchedulerStart starts the chain's SchedulerWorkflow for the heights of
// owned (mode: types.IndexMode scheduler). A second start while one runs
// fails with serviceerror.WorkflowExecutionAlreadyStarted: the conflict
// policy says so explicitly, because the SDK's default would silently
// hand back the running one. The owned span goes in the memo
// (SchedulerOwnedMemo), where a describe call reads it without waiting for
// the workflow, and in HeightFrom/HeightTo. Memo and search attributes
// carry over when it continues as new.
func (o Options) SchedulerStart(owned chaindata.HeightRange, mode string) client.StartWorkflowOptions {
	v := o.describe(mode, &owned, 0,
		fmt.Sprintf("catch-up of heights %d-%d of chain %s", owned.From, owned.To, o.ChainID))
	v.memo[SchedulerOwnedMemo] = owned
	return client.StartWorkflowOptions{
		ID:                                       SchedulerID(o.ChainID),
		TaskQueue:                                AdminQueue(o.ChainID),
		WorkflowTaskTimeout:                      ShortTaskTimeout,
		WorkflowIDConflictPolicy:                 enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		TypedSearchAttributes:                    v.attrs,
		Memo:                                     v.memo,
		StaticSummary:                            v.summary,
	}
}

// JobActivity is a side job's activity options: on the chain's admin
// queue, an attempt bounded by startToClose, a worker's death noticed
// within heartbeat, retried with the job's policy until its run's
// timeout.
func (o Options) JobActivity(startToClose, heartbeat time.Duration, retry config.RetryPolicy) workflow.ActivityOptions {
	return workflow.ActivityOptions{
		TaskQueue:           AdminQueue(o.ChainID),
		StartToCloseTimeout: startToClose,
		HeartbeatTimeout:    heartbeat,
		RetryPolicy:         RetryPolicy(retry),
	}
}

// AdminStart starts a long-lived workflow of the chain's admin queue under
// a fixed ID, or finds it running (conflict policy use-existing: a second
// start is no error and starts nothing); one that ended may be started
// again. Described like every start (mode, summary): a side job's workflow
// of one subject (a webhook subscription's delivery), which may add keys
// of its own to the memo.
func (o Options) AdminStart(id, mode, summary string) client.StartWorkflowOptions {
	v := o.describe(mode, nil, 0, summary)
	return client.StartWorkflowOptions{
		ID:                       id,
		TaskQueue:                AdminQueue(o.ChainID),
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		TypedSearchAttributes:    v.attrs,
		Memo:                     v.memo,
		StaticSummary:            v.summary,
	}
}

// HeadScanSchedule is the Schedule that runs the chain's HeadScan every
// `every` with input arg (mode: types.IndexMode direct, the path HeadScan
// starts heights by).
func (o Options) HeadScanSchedule(every time.Duration, mode string, arg any) PeriodicWorkflow {
	p := o.ScanSchedule(HeadScanScheduleID(o.ChainID), HeadScanWorkflowID(o.ChainID), HeadScanWorkflow, "head scan", every, mode, arg)
	// The Schedule skips while a run is under way: a task lost with its
	// worker would hold every live height for the server's 10 s.
	p.TaskTimeout = ShortTaskTimeout
	return p
}

// ShortTaskTimeout is the workflow task timeout of the live path's
// workflows (HeadScan, IndexBlock) and of the Scheduler: how long a
// workflow task handed to a worker that died or stopped answering (a
// frozen process still holds its polls, so the server hands it tasks)
// waits before another worker gets it. Their tasks are short; a local
// activity longer than that keeps its task alive, the SDK completing the
// task at 80 % of the timeout and going on in the next, which is also
// when a query waiting on the workflow (the Scheduler's progress) can be
// answered: after ~3 s rather than ~8.
const ShortTaskTimeout = 4 * time.Second

// GapScanSchedule is the Schedule that runs the chain's GapScan every
// `every` with input arg (mode: types.IndexMode gap).
func (o Options) GapScanSchedule(every time.Duration, mode string, arg any) PeriodicWorkflow {
	return o.ScanSchedule(GapScanScheduleID(o.ChainID), GapScanWorkflowID(o.ChainID), GapScanWorkflow, "gap scan", every, mode, arg)
}

// ScanSchedule is a Schedule of the chain's admin queue that starts
// workflowType every `every` with input arg, overlap skip, described for
// the Web UI as "<what> of chain <id>, every <every>": the scans' and every
// side job's (each sets its own run timeout on it).
func (o Options) ScanSchedule(scheduleID, workflowID, workflowType, what string, every time.Duration, mode string, arg any) PeriodicWorkflow {
	v := o.describe(mode, nil, 0, fmt.Sprintf("%s of chain %s, every %v", what, o.ChainID, every))
	return PeriodicWorkflow{
		ScheduleID:       scheduleID,
		WorkflowID:       workflowID,
		Workflow:         workflowType,
		TaskQueue:        AdminQueue(o.ChainID),
		Every:            every,
		Timeout:          o.ScanTimeout(),
		Args:             []any{arg},
		SearchAttributes: v.attrs,
		Memo:             v.memo,
		Summary:          v.summary,
	}
}

// ScanTimeout bounds one HeadScan or GapScan run, well under its period so
// that the Schedule's skip policy never holds back the next run for long.
func (o Options) ScanTimeout() time.Duration { return 5 * time.Minute }
