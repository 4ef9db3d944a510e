package workflow

import (
	"go.temporal.io/sdk/workflow"

	"github.com/tideline-dev/tideline/pkg/indexer/types"
)

// Prune's activity (pkg/indexer/activity/prune.go): Prune, a regular
// activity on the admin queue.

// Prune runs from a Temporal Schedule every retention.interval, only for a
// chain with retention on: its activity raises the chain's pruned height
// to what retention allows (never above the watermark minus the retention
// margin, nor above the aggregator's height) and deletes the detailed
// rows at or below it. The Web UI shows each run's result (pruned height,
// partitions dropped, mutations started, or why it waited).
func (w *Workflows) Prune(ctx workflow.Context, in types.PruneInput) (types.PruneResult, error) {
	c := w.Chain
	actx := workflow.WithActivityOptions(ctx, c.Options.PruneActivity())
	var res types.PruneResult
	err := workflow.ExecuteActivity(actx, a.Prune, in).Get(actx, &res)
	return res, err
}
