package temporal

import (
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/tideline-dev/tideline/pkg/config"
)

// Options builds every workflow, activity and start option of one chain from
// its config, so no workflow file holds an options literal.
type Options struct {
	ChainID string
	Chain   config.Chain
}

// NewOptions returns the option builder of one chain.
func NewOptions(chainID string, ch config.Chain) Options {
	return Options{ChainID: chainID, Chain: ch}
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
		StartToCloseTimeout: o.Chain.Index.ActivityTimeout,
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

// SchedulerStart starts the chain's SchedulerWorkflow. A second start while
// one runs fails with serviceerror.WorkflowExecutionAlreadyStarted: the
// conflict policy says so explicitly, because the SDK's default would
// silently hand back the running one.
func (o Options) SchedulerStart() client.StartWorkflowOptions {
	return client.StartWorkflowOptions{
		ID:                                       SchedulerID(o.ChainID),
		TaskQueue:                                AdminQueue(o.ChainID),
		WorkflowIDConflictPolicy:                 enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowExecutionErrorWhenAlreadyStarted: true,
	}
}

// ScanTimeout bounds one HeadScan or GapScan run, well under its period so
// that the Schedule's skip policy never holds back the next run for long.
func (o Options) ScanTimeout() time.Duration { return 5 * time.Minute }
