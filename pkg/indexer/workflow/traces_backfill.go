package workflow

import (
	"go.temporal.io/sdk/workflow"

	"github.com/tideline-dev/tideline/pkg/indexer/types"
)

// TraceBackfill's activity (pkg/indexer/activity/traces_backfill.go):
// BackfillTraces, a regular activity on the admin queue.

// TraceBackfill runs from a Temporal Schedule every
// traces.backfill.interval while the chain traces: its activity fills
// the traces of heights indexed without them, newest first, for a few
// minutes, its progress saved in chain_state, so the Schedule's next run
// goes on from there (`indexer status` shows it). The Web UI shows each
// run's result (heights traced, where the pass is).
func (w *Workflows) TraceBackfill(ctx workflow.Context, in types.TraceBackfillInput) (types.TraceBackfillResult, error) {
	actx := workflow.WithActivityOptions(ctx, w.Chain.Options.TraceBackfillActivity())
	var res types.TraceBackfillResult
	err := workflow.ExecuteActivity(actx, a.BackfillTraces, in).Get(actx, &res)
	return res, err
}
