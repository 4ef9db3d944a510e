// Package tracebackfill is the traces backfill, a side job of a chain
// that traces: a TraceBackfill workflow a Temporal Schedule runs, filling
// the traces of heights indexed without them, newest first, from where the
// last run stopped. Its Schedule, workflow, activity, input and result,
// options, metrics and the store methods it needs are all here.
package tracebackfill

import (
	"context"
	"sync"
	"time"

	sdkactivity "go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"go.uber.org/zap"
	"golang.org/x/time/rate"

	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/rpc"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// ActivityName is the activity's name in histories (unchanged since the
// activity was a method of the indexer's Activities).
const ActivityName = "BackfillTraces"

// Settings are the chain settings the backfill reads.
type Settings struct {
	// Traces is true while the chain is indexed with its call traces (the
	// traces setting, auto resolved by the worker's probe).
	Traces bool
	// Backfill is traces.backfill.*: heights per second (per process),
	// heights per batch, how often its Schedule runs.
	Backfill config.TraceBackfill
}

// Progress is where the backfill reads the lowest height the chain's rows
// start at (the indexer's *activity.Activities, which owns the floor).
type Progress interface {
	Floor(ctx context.Context) (uint64, error)
}

// Job is one chain's traces backfill.
type Job struct {
	ChainID  string
	Settings Settings
	Options  temporal.Options
	// RPC is the chain's client: the backfill asks it for traces only.
	RPC      rpc.Client
	Store    Store
	Progress Progress
	Metrics  *Metrics
	Log      *zap.Logger

	// rate caps the heights the backfill traces per second in this
	// process.
	rateOnce sync.Once
	rate     *rate.Limiter
}

// Register registers the job's workflow and activity, under the names
// histories know them by.
func (j *Job) Register(r worker.Registry) {
	r.RegisterWorkflowWithOptions(j.Workflow, workflow.RegisterOptions{Name: temporal.TraceBackfillWorkflow})
	r.RegisterActivityWithOptions(j.BackfillTraces, sdkactivity.RegisterOptions{Name: ActivityName})
}

// Budget is how long one backfill activity attempt works before it
// returns (its progress saved in chain_state); the Schedule's next run
// goes on from there.
const Budget = 4 * time.Minute

// RunTimeout bounds one TraceBackfill run: a few attempts of its activity.
const RunTimeout = 20 * time.Minute

// Schedule is the Schedule that runs the chain's TraceBackfill every
// `every` (traces.backfill.interval), only while the chain traces.
// Overlap skip: a run under way is never stacked with the next.
func Schedule(o temporal.Options, every time.Duration) temporal.PeriodicWorkflow {
	p := o.ScanSchedule(temporal.TraceBackfillScheduleID(o.ChainID), temporal.TraceBackfillWorkflowID(o.ChainID), temporal.TraceBackfillWorkflow,
		"traces backfill", every, string(types.IndexModeTraces), Input{ChainID: o.ChainID})
	p.Timeout = RunTimeout
	return p
}

// activityOptions are for the backfill's activity on the admin queue: it
// heartbeats after every batch, is retried with the aggregator's policy,
// and a retry resumes from the saved state.
func activityOptions(o temporal.Options) workflow.ActivityOptions {
	return o.JobActivity(Budget+2*time.Minute, time.Minute, o.Retry.Aggregate)
}
