package temporal

import (
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/workflow"
)

// The change stream's appender (pkg/stream): a StreamAppend workflow a
// Temporal Schedule runs while the chain's stream is on. Its one activity
// appends for StreamRunFor, then the run ends and the Schedule's next
// starts: one appender per chain at a time, moved to another worker when
// its process dies (heartbeat timeout), and visible in the Web UI.

// StreamAppendWorkflow is the appender's workflow type.
const StreamAppendWorkflow = "StreamAppend"

// StreamScheduleID is the ID of the Schedule that runs it.
func StreamScheduleID(chainID string) string { return chainID + ":stream" }

// StreamWorkflowID is the workflow ID prefix of its runs.
func StreamWorkflowID(chainID string) string { return chainID + ":stream" }

// StreamRunFor is how long one appender activity appends before it
// returns; the Schedule fires every StreamRunFor with overlap buffer-one,
// so the next run starts as soon as this one ends.
const StreamRunFor = time.Minute

// StreamSchedule is the Schedule of the chain's appender (mode:
// types.IndexMode stream).
func (o Options) StreamSchedule(mode string, arg any) PeriodicWorkflow {
	p := o.ScanSchedule(StreamScheduleID(o.ChainID), StreamWorkflowID(o.ChainID), StreamAppendWorkflow,
		"change stream", StreamRunFor, mode, arg)
	p.Timeout = 10 * StreamRunFor
	// Skip would leave a gap of up to a period when a run ends just after
	// the Schedule fired; buffer-one starts the next run when it ends.
	p.Overlap = enumspb.SCHEDULE_OVERLAP_POLICY_BUFFER_ONE
	return p
}

// StreamActivity is for the appender's activity on the admin queue. It
// heartbeats on every look (a few a second): a dead worker's appender is
// taken over within the heartbeat timeout. Retried with the aggregator's
// policy; an attempt reads where the stream is from the log.
func (o Options) StreamActivity() workflow.ActivityOptions {
	return workflow.ActivityOptions{
		TaskQueue:           AdminQueue(o.ChainID),
		StartToCloseTimeout: StreamRunFor + time.Minute,
		HeartbeatTimeout:    15 * time.Second,
		RetryPolicy:         RetryPolicy(o.Retry.Aggregate),
	}
}
