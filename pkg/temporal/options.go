package temporal

import (
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/tideline-dev/tideline/pkg/chain"
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
}

// NewOptions returns the option builder of one chain.
func NewOptions(chainID string, indexTimeout time.Duration) Options {
	return Options{ChainID: chainID, IndexTimeout: indexTimeout}
}

// LocalActivity is for the fast calls a scan makes (head, watermark, starts):
// the seed's 20 s schedule-to-close, 5 attempts, backoff 0.5 s → 5 s.
func (o Options) LocalActivity() workflow.LocalActivityOptions {
	return workflow.LocalActivityOptions{
		ScheduleToCloseTimeout: 20 * time.Second,
		RetryPolicy: &sdktemporal.RetryPolicy{
			InitialInterval:    500 * time.Millisecond,
			BackoffCoefficient: 2,
			MaximumInterval:    5 * time.Second,
			MaximumAttempts:    5,
		},
	}
}

// AdminActivity is for regular activities on the admin queue (calls to the
// Temporal API, such as the scheduler check).
func (o Options) AdminActivity() workflow.ActivityOptions {
	return workflow.ActivityOptions{
		TaskQueue:           AdminQueue(o.ChainID),
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy: &sdktemporal.RetryPolicy{
			InitialInterval:    500 * time.Millisecond,
			BackoffCoefficient: 2,
			MaximumInterval:    10 * time.Second,
			MaximumAttempts:    5,
		},
	}
}

// IndexActivity is for fetching and writing one block. Attempts are
// unlimited: a height is never given up, only retried with backoff, so no
// height is skipped; a poisoned height shows in the activity's attempt count.
func (o Options) IndexActivity() workflow.ActivityOptions {
	return workflow.ActivityOptions{
		TaskQueue:           IndexQueue(o.ChainID),
		StartToCloseTimeout: o.IndexTimeout,
		RetryPolicy: &sdktemporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    time.Minute,
		},
	}
}

// IndexBlockStart starts the IndexBlockWorkflow of one height. The ID is
// fixed per height; while a run exists, a second start returns it instead of
// starting another, and a finished height may be started again (the run
// then returns at once because the height is indexed). priorityKey is
// Temporal's (1 = most urgent): types.PriorityLevel.PriorityKey makes it.
func (o Options) IndexBlockStart(height uint64, priorityKey int) client.StartWorkflowOptions {
	return client.StartWorkflowOptions{
		ID:                       IndexBlockID(o.ChainID, height),
		TaskQueue:                IndexQueue(o.ChainID),
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		Priority:                 sdktemporal.Priority{PriorityKey: priorityKey},
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
		RetryPolicy: &sdktemporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    time.Minute,
		},
	}
}

// IndexRangeStart starts the IndexRange workflow of [from, to] on the
// range queue at the given Temporal priority key. As for a height, the ID
// is fixed: a retried start returns the running workflow, and a finished
// range may be started again (its activity then finds it indexed).
func (o Options) IndexRangeStart(from, to uint64, priorityKey int) client.StartWorkflowOptions {
	return client.StartWorkflowOptions{
		ID:                       IndexRangeID(o.ChainID, from, to),
		TaskQueue:                RangeQueue(o.ChainID),
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		Priority:                 sdktemporal.Priority{PriorityKey: priorityKey},
	}
}

// SchedulerStart starts the chain's SchedulerWorkflow for the heights of
// owned. A second start while one runs fails with
// serviceerror.WorkflowExecutionAlreadyStarted: the conflict policy says so
// explicitly, because the SDK's default would silently hand back the
// running one. The owned span goes in the memo (SchedulerOwnedMemo), where
// a describe call reads it without waiting for the workflow.
func (o Options) SchedulerStart(owned chain.HeightRange) client.StartWorkflowOptions {
	return client.StartWorkflowOptions{
		ID:                                       SchedulerID(o.ChainID),
		TaskQueue:                                AdminQueue(o.ChainID),
		WorkflowIDConflictPolicy:                 enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		Memo:                                     map[string]any{SchedulerOwnedMemo: owned},
	}
}

// ScanTimeout bounds one HeadScan or GapScan run, well under its period so
// that the Schedule's skip policy never holds back the next run for long.
func (o Options) ScanTimeout() time.Duration { return 5 * time.Minute }
