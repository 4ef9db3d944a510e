package workflow

import (
	"go.temporal.io/sdk/workflow"

	"github.com/tideline-dev/tideline/pkg/indexer/types"
)

// StreamAppend's activity (pkg/indexer/activity/stream.go): AppendStream,
// a long activity on the admin queue that heartbeats on every look.

// StreamAppend runs from a Temporal Schedule while the chain's stream is
// on: its activity appends the chain's change-stream events for
// temporal.StreamRunFor, then the Schedule's next run goes on from the
// log. The Web UI shows each run's result (events appended, last seq).
func (w *Workflows) StreamAppend(ctx workflow.Context, in types.StreamInput) (types.StreamResult, error) {
	actx := workflow.WithActivityOptions(ctx, w.Chain.Options.StreamActivity())
	var res types.StreamResult
	err := workflow.ExecuteActivity(actx, a.AppendStream, in).Get(actx, &res)
	return res, err
}
