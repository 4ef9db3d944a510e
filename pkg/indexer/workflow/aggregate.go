package workflow

import (
	"go.temporal.io/sdk/workflow"

	"github.com/tideline-dev/tideline/pkg/indexer/types"
)

// Aggregate's activity (pkg/indexer/activity/aggregate.go): Aggregate, a
// regular activity on the admin queue with heartbeats.

// Aggregate runs from a Temporal Schedule every aggregator.interval
// (overlap: skip) and keeps the chain's aggregates table, the cumulative
// transactions, logs and bytes per height, up to the watermark: its one
// activity counts from where the last run stopped, in chunks while
// behind and single blocks at the head, rewinds below a reorganisation,
// and returns within its time budget (the next run goes on). A run is one
// activity, so the Web UI shows each one's result (the aggregator's
// height, heights counted, rewinds) and any failure.
func (w *Workflows) Aggregate(ctx workflow.Context, in types.AggregateInput) (types.AggregateResult, error) {
	c := w.Chain
	actx := workflow.WithActivityOptions(ctx, c.Options.AggregateActivity())
	var res types.AggregateResult
	err := workflow.ExecuteActivity(actx, a.Aggregate, in).Get(actx, &res)
	return res, err
}
