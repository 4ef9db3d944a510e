package worker

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/indexer/activity"
	"github.com/tideline-dev/tideline/pkg/indexer/jobs/aggregate"
	"github.com/tideline-dev/tideline/pkg/indexer/jobs/retention"
	"github.com/tideline-dev/tideline/pkg/indexer/jobs/streamappend"
	"github.com/tideline-dev/tideline/pkg/indexer/jobs/tokenmeta"
	"github.com/tideline-dev/tideline/pkg/indexer/jobs/tracebackfill"
	"github.com/tideline-dev/tideline/pkg/indexer/jobs/webhook"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// Job is a chain's Schedule-driven side job with a package of its own
// (pkg/indexer/jobs/<job>): it registers its workflow and activities,
// under the names histories know, beside the indexing path's.
type Job interface {
	Register(r sdkworker.Registry)
}

// preparer is a job with a step at its chain's start, before the chain's
// workers run (the traces backfill records whether the chain traces).
type preparer interface {
	Prepare(ctx context.Context) error
}

// prepareJobs runs the jobs' start steps.
func prepareJobs(ctx context.Context, id string, jobs []Job) error {
	for _, j := range jobs {
		if p, ok := j.(preparer); ok {
			if err := p.Prepare(ctx); err != nil {
				return fmt.Errorf("chain %s: %T: %w", id, j, err)
			}
		}
	}
	return nil
}

// jobMetrics are the side jobs' series, one set per process.
type jobMetrics struct {
	aggregate *aggregate.Metrics
	retention *retention.Metrics
	stream    *streamappend.Metrics
	tokens    *tokenmeta.Metrics
	traces    *tracebackfill.Metrics
	webhooks  *webhook.Metrics
}

// newJobMetrics makes the jobs' series; written is the indexer's count of
// call frames, which the traces backfill adds to.
func newJobMetrics(reg prometheus.Registerer, written *prometheus.CounterVec) jobMetrics {
	return jobMetrics{aggregate: aggregate.NewMetrics(reg), retention: retention.NewMetrics(reg), stream: streamappend.NewMetrics(reg),
		tokens: tokenmeta.NewMetrics(reg), traces: tracebackfill.NewMetrics(reg, written), webhooks: webhook.NewMetrics(reg)}
}

// chainJobs are the side jobs of chain id, with what each needs; acts is
// the chain's indexing path, which owns the watermark the jobs read and
// tells them of its reorg repairs, and whose Traces says whether the chain
// traces (resolved by the worker's probe). The webhook deliveries' settings
// are the process's (webhooks.*), as are their sender and environment.
func chainJobs(id string, o temporal.Options, ch config.Chain, p *process, acts *activity.Activities) []Job {
	agg := &aggregate.Job{
		ChainID: id, Settings: aggregate.SettingsOf(ch), Options: o,
		Store: p.store.Aggregates(), Progress: acts, Metrics: p.jobMetrics.aggregate, Log: p.log,
	}
	acts.AfterRepair = agg.Rewind
	prune := &retention.Job{
		ChainID: id, Settings: retention.SettingsOf(ch), Options: o,
		Store: p.store.Retention(), Progress: acts, Metrics: p.jobMetrics.retention, Log: p.log,
	}
	appender := &streamappend.Job{
		ChainID: id, Settings: streamappend.SettingsOf(ch), Options: o,
		Store: p.store.Stream(), Metrics: p.jobMetrics.stream, Log: p.log,
	}
	meta := &tokenmeta.Job{
		ChainID: id, StartHeight: ch.StartHeight, Options: o, RPC: acts.Chain.RPC,
		Store: p.store.Tokens(), Metrics: p.jobMetrics.tokens, Log: p.log,
	}
	backfill := &tracebackfill.Job{
		ChainID: id, Settings: tracebackfill.Settings{Traces: acts.Chain.Traces, Backfill: ch.Traces.Backfill}, Options: o,
		RPC: acts.Chain.RPC, Store: p.store.Traces(), Progress: acts, Metrics: p.jobMetrics.traces, Log: p.log,
	}
	deliveries := &webhook.Job{
		ChainID: id, Settings: webhook.Settings{Webhooks: p.cfg.Webhooks.WithDefaults()}, Options: o,
		Subscriptions: p.store.Reader().Records(), Stream: p.store.Reader().Stream(),
		Sender: p.sender, LookupEnv: p.lookupEnv, Metrics: p.jobMetrics.webhooks, Log: p.log,
	}
	return []Job{agg, prune, appender, meta, backfill, deliveries}
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
		&tracebackfill.Job{ChainID: id, Options: o},
		&webhook.Job{ChainID: id, Options: o},
	}
}
