// Package streamappend is the change stream's appender, a side job of a
// chain with its stream on: a StreamAppend workflow a Temporal Schedule
// runs, whose one activity steps pkg/stream's Appender for RunFor, then
// the run ends and the Schedule's next starts: one appender per chain at a
// time, moved to another worker when its process dies (heartbeat
// timeout), and visible in the Web UI. Its Schedule, workflow, activity,
// input and result, options and metrics are all here.
package streamappend

import (
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	sdkactivity "go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/stream"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// ActivityName is the activity's name in histories (unchanged since the
// activity was a method of the indexer's Activities).
const ActivityName = "AppendStream"

// Settings are the chain settings the appender reads.
type Settings struct {
	StartHeight uint64
	// ConfirmationDepth is how far below the tip a reorganisation is
	// looked for (the appender's window; 0: no parent check).
	ConfirmationDepth int
	// Stream is stream.*: on or off, how often to look, the most events
	// one step appends.
	Stream config.Stream
}

// SettingsOf is the appender's part of a chain's settings.
func SettingsOf(ch config.Chain) Settings {
	return Settings{StartHeight: ch.StartHeight, ConfirmationDepth: ch.ConfirmationDepth, Stream: ch.Stream}
}

// Job is one chain's appender.
type Job struct {
	ChainID  string
	Settings Settings
	Options  temporal.Options
	Store    stream.Store
	Metrics  *Metrics // nil: not counted
	Log      *zap.Logger
}

// Register registers the job's workflow and activity, under the names
// histories know them by.
func (j *Job) Register(r worker.Registry) {
	r.RegisterWorkflowWithOptions(j.Workflow, workflow.RegisterOptions{Name: temporal.StreamAppendWorkflow})
	r.RegisterActivityWithOptions(j.AppendStream, sdkactivity.RegisterOptions{Name: ActivityName})
}

// RunFor is how long one appender activity appends before it returns; the
// Schedule fires every RunFor with overlap buffer-one, so the next run
// starts as soon as this one ends.
const RunFor = time.Minute

// Schedule is the appender's Schedule of the chain of o.
func Schedule(o temporal.Options) temporal.PeriodicWorkflow {
	p := o.ScanSchedule(temporal.StreamScheduleID(o.ChainID), temporal.StreamWorkflowID(o.ChainID), temporal.StreamAppendWorkflow,
		"change stream", RunFor, string(types.IndexModeStream), Input{ChainID: o.ChainID})
	p.Timeout = 10 * RunFor
	// Skip would leave a gap of up to a period when a run ends just after
	// the Schedule fired; buffer-one starts the next run when it ends.
	p.Overlap = enumspb.SCHEDULE_OVERLAP_POLICY_BUFFER_ONE
	return p
}

// activityOptions are for the appender's activity on the admin queue. It
// heartbeats on every look (a few a second): a dead worker's appender is
// taken over within the heartbeat timeout. Retried with the aggregator's
// policy; an attempt reads where the stream is from the log.
func activityOptions(o temporal.Options) workflow.ActivityOptions {
	return o.JobActivity(RunFor+time.Minute, 15*time.Second, o.Retry.Aggregate)
}
