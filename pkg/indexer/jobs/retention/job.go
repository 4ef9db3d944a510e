// Package retention is retention, a side job of a chain with
// retention.keep_heights or retention.keep_days set: it keeps only the
// chain's newest detailed rows, raising the pruned height and deleting the
// rows at or below it. Its Schedule, workflow (type Prune), activity,
// input and result, options, metrics and the store methods it needs are
// all here; the worker registers it beside the other jobs.
package retention

import (
	"context"
	"time"

	sdkactivity "go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// ActivityName is the activity's name in histories (unchanged since the
// activity was a method of the indexer's Activities).
const ActivityName = "Prune"

// Settings are the chain settings retention reads.
type Settings struct {
	// StartHeight is the chain's first height.
	StartHeight uint64
	// Retention is retention.*: what to keep, and how often to prune.
	Retention config.Retention
	// Margin is the heights below the watermark never pruned
	// (config.Chain.RetentionMargin: what a reorg repair, or a retried or
	// duplicate write of a height just indexed, may still write).
	Margin uint64
}

// SettingsOf is retention's part of a chain's settings.
func SettingsOf(ch config.Chain) Settings {
	return Settings{StartHeight: ch.StartHeight, Retention: ch.Retention, Margin: ch.RetentionMargin()}
}

// Progress is where retention reads how far the chain is indexed: the
// watermark and its floor (the indexer's *activity.Activities, which owns
// the watermark).
type Progress interface {
	Watermark(ctx context.Context, chainID string) (types.WatermarkResult, error)
}

// Job is one chain's retention.
type Job struct {
	ChainID  string
	Settings Settings
	Options  temporal.Options
	Store    Store
	Progress Progress
	Metrics  *Metrics
	Log      *zap.Logger
}

// Register registers the job's workflow and activity, under the names
// histories know them by.
func (j *Job) Register(r worker.Registry) {
	r.RegisterWorkflowWithOptions(j.Workflow, workflow.RegisterOptions{Name: temporal.PruneWorkflow})
	r.RegisterActivityWithOptions(j.Prune, sdkactivity.RegisterOptions{Name: ActivityName})
}

// Schedule is retention's Schedule of the chain of o, every `every`
// (retention.interval); only a chain with retention on has it.
func Schedule(o temporal.Options, every time.Duration) temporal.PeriodicWorkflow {
	p := o.ScanSchedule(temporal.PruneScheduleID(o.ChainID), temporal.PruneWorkflowID(o.ChainID), temporal.PruneWorkflow,
		"retention", every, string(types.IndexModePrune), Input{ChainID: o.ChainID})
	p.Timeout = RunTimeout
	return p
}

// RunTimeout bounds one Prune run.
const RunTimeout = 20 * time.Minute

// activityOptions are for the Prune activity on the admin queue: partition
// drops and starting mutations take seconds (the mutations themselves run
// in ClickHouse's background); attempts are bounded by the run's timeout,
// and the next run tries again.
func activityOptions(o temporal.Options) workflow.ActivityOptions {
	return o.JobActivity(5*time.Minute, time.Minute, o.Retry.Prune)
}
