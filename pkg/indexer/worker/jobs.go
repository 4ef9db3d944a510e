package worker

import (
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/indexer/activity"
	"github.com/tideline-dev/tideline/pkg/indexer/jobs/aggregate"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// Job is a chain's Schedule-driven side job with a package of its own
// (pkg/indexer/jobs/<job>): it registers its workflow and activities,
// under the names histories know, beside the indexing path's.
type Job interface {
	Register(r sdkworker.Registry)
}

// jobMetrics are the side jobs' series, one set per process.
type jobMetrics struct {
	aggregate *aggregate.Metrics
}

// chainJobs are the side jobs of chain id, with what each needs; acts is
// the chain's indexing path, which owns the watermark the jobs read and
// tells them of its reorg repairs.
func chainJobs(id string, o temporal.Options, ch config.Chain, p *process, acts *activity.Activities) []Job {
	agg := &aggregate.Job{
		ChainID: id, Settings: aggregate.SettingsOf(ch), Options: o,
		Store: p.store, Progress: acts, Metrics: p.jobMetrics.aggregate, Log: p.log,
	}
	acts.AfterRepair = agg.Rewind
	return []Job{agg}
}

// ReplayJobs are the side jobs as a replayer registers them: their
// workflows, built from the chain's options, with nothing to run their
// activities (a replay runs none).
func ReplayJobs(id string, o temporal.Options, ch config.Chain) []Job {
	return []Job{&aggregate.Job{ChainID: id, Settings: aggregate.SettingsOf(ch), Options: o}}
}
