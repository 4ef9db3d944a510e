package worker

import (
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/indexer/activity"
	"github.com/tideline-dev/tideline/pkg/indexer/jobs/aggregate"
	"github.com/tideline-dev/tideline/pkg/indexer/jobs/retention"
	"github.com/tideline-dev/tideline/pkg/indexer/jobs/streamappend"
	"github.com/tideline-dev/tideline/pkg/indexer/jobs/tokenmeta"
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
	retention *retention.Metrics
	stream    *streamappend.Metrics
	tokens    *tokenmeta.Metrics
}

func newJobMetrics(reg prometheus.Registerer) jobMetrics {
	return jobMetrics{aggregate: aggregate.NewMetrics(reg), retention: retention.NewMetrics(reg), stream: streamappend.NewMetrics(reg),
		tokens: tokenmeta.NewMetrics(reg)}
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
	prune := &retention.Job{
		ChainID: id, Settings: retention.SettingsOf(ch), Options: o,
		Store: p.store, Progress: acts, Metrics: p.jobMetrics.retention, Log: p.log,
	}
	appender := &streamappend.Job{
		ChainID: id, Settings: streamappend.SettingsOf(ch), Options: o,
		Store: p.store, Metrics: p.jobMetrics.stream, Log: p.log,
	}
	meta := &tokenmeta.Job{
		ChainID: id, StartHeight: ch.StartHeight, Options: o, RPC: acts.Chain.RPC,
		Store: p.store, Metrics: p.jobMetrics.tokens, Log: p.log,
	}
	return []Job{agg, prune, appender, meta}
}

// ReplayJobs are the side jobs as a replayer registers them: their
// workflows, built from the chain's options, with nothing to run their
// activities (a replay runs none).
func ReplayJobs(id string, o temporal.Options, ch config.Chain) []Job {
	return []Job{
		&aggregate.Job{ChainID: id, Settings: aggregate.SettingsOf(ch), Options: o},
		&retention.Job{ChainID: id, Settings: retention.SettingsOf(ch), Options: o},
		&streamappend.Job{ChainID: id, Settings: streamappend.SettingsOf(ch), Options: o},
		&tokenmeta.Job{ChainID: id, StartHeight: ch.StartHeight, Options: o},
	}
}
