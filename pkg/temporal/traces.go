package temporal

import (
	"time"

	"go.temporal.io/sdk/workflow"
)

// The traces backfill (issue 20): a TraceBackfill workflow a Temporal
// Schedule runs while a chain traces, filling the traces of heights
// indexed without them, newest first, from where the last run stopped.

// TraceBackfillWorkflow is the backfill's workflow type.
const TraceBackfillWorkflow = "TraceBackfill"

// TraceBackfillScheduleID is the ID of the Schedule that runs it (only
// while the chain traces).
func TraceBackfillScheduleID(chainID string) string { return chainID + ":traces-backfill" }

// TraceBackfillWorkflowID is the workflow ID prefix of its runs.
func TraceBackfillWorkflowID(chainID string) string { return chainID + ":traces-backfill" }

// TraceBackfillBudget is how long one backfill activity attempt works
// before it returns (its progress saved in chain_state); the Schedule's
// next run goes on from there.
const TraceBackfillBudget = 4 * time.Minute

// TraceBackfillSchedule is the Schedule that runs the chain's
// TraceBackfill every `every` with input arg (mode: types.IndexMode
// traces). Overlap skip: a run under way is never stacked with the next.
func (o Options) TraceBackfillSchedule(every time.Duration, mode string, arg any) PeriodicWorkflow {
	p := o.ScanSchedule(TraceBackfillScheduleID(o.ChainID), TraceBackfillWorkflowID(o.ChainID), TraceBackfillWorkflow,
		"traces backfill", every, mode, arg)
	p.Timeout = o.TraceBackfillTimeout()
	return p
}

// TraceBackfillActivity is for the backfill's activity on the admin queue:
// it heartbeats after every batch, is retried with the aggregator's
// policy, and a retry resumes from the saved state.
func (o Options) TraceBackfillActivity() workflow.ActivityOptions {
	return workflow.ActivityOptions{
		TaskQueue:           AdminQueue(o.ChainID),
		StartToCloseTimeout: TraceBackfillBudget + 2*time.Minute,
		HeartbeatTimeout:    time.Minute,
		RetryPolicy:         RetryPolicy(o.Retry.Aggregate),
	}
}

// TraceBackfillTimeout bounds one TraceBackfill run: a few attempts of its
// activity.
func (o Options) TraceBackfillTimeout() time.Duration { return 20 * time.Minute }
