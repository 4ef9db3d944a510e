// Package aggregate is the aggregator, a side job of every chain: it keeps
// the chain's aggregates table (cumulative transactions, logs and bytes per
// height) up to the watermark, so that the totals of any height range are
// two rows subtracted (the seed's aggregator task). Its Schedule, workflow,
// activity, input and result, options, metrics and the store methods it
// needs are all here; the worker registers it beside the other jobs.
package aggregate

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
const ActivityName = "Aggregate"

// Settings are the chain settings the aggregator reads.
type Settings struct {
	// StartHeight is the chain's first height: counting starts there.
	StartHeight uint64
	// Chunk is aggregator.chunk: heights per read and insert.
	Chunk int
	// Interval is aggregator.interval: how often its Schedule runs.
	Interval time.Duration
}

// SettingsOf is the aggregator's part of a chain's settings.
func SettingsOf(ch config.Chain) Settings {
	return Settings{StartHeight: ch.StartHeight, Chunk: ch.Aggregator.Chunk, Interval: ch.Aggregator.Interval}
}

// Progress is where the aggregator reads how far the chain is indexed:
// the watermark and the floor below which retention removed the rows
// (the indexer's *activity.Activities, which owns the watermark).
type Progress interface {
	Watermark(ctx context.Context, chainID string) (types.WatermarkResult, error)
}

// Job is one chain's aggregator.
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
	r.RegisterWorkflowWithOptions(j.Workflow, workflow.RegisterOptions{Name: temporal.AggregateWorkflow})
	r.RegisterActivityWithOptions(j.Aggregate, sdkactivity.RegisterOptions{Name: ActivityName})
}

// Schedule is the job's Schedule: every aggregator.interval, overlap skip
// (a run draining a long backlog is never stacked with the next).
func (j *Job) Schedule() temporal.PeriodicWorkflow {
	return Schedule(j.Options, j.Settings.Interval)
}

// Schedule is the aggregator's Schedule of the chain of o, every `every`.
func Schedule(o temporal.Options, every time.Duration) temporal.PeriodicWorkflow {
	p := o.ScanSchedule(temporal.AggregateScheduleID(o.ChainID), temporal.AggregateWorkflowID(o.ChainID), temporal.AggregateWorkflow,
		"aggregator", every, string(types.IndexModeAggregate), Input{ChainID: o.ChainID})
	p.Timeout = RunTimeout
	return p
}

// Budget is how long one Aggregate activity attempt counts before it
// returns (with what it counted saved); the next run of the Schedule goes
// on from there. Well under the activity's timeout.
const Budget = 2 * time.Minute

// RunTimeout bounds one Aggregate run: a few attempts of its activity.
const RunTimeout = 10 * time.Minute

// activityOptions are for the Aggregate activity on the admin queue: it
// heartbeats after every chunk (a worker that dies mid-chunk is noticed in
// 30 s; the retry resumes from the saved height), and is retried until the
// run's timeout, which the next run follows.
func activityOptions(o temporal.Options) workflow.ActivityOptions {
	return o.JobActivity(2*Budget, 30*time.Second, o.Retry.Aggregate)
}
