package workflow

import (
	"go.temporal.io/sdk/workflow"

	"github.com/tideline-dev/tideline/pkg/indexer/types"
)

// IndexBlock's activities (files in pkg/indexer/activity): IsIndexed
// (index.go, local), then IndexBlock (index.go, on the index queue), which
// writes through write.go and repairs reorganisations in reorg.go.

// IndexBlock indexes one height: a cheap check first (the height may have
// been indexed by an earlier run or the other source), then one activity
// that fetches and writes the block. Its ID is fixed per (chain, height).
func (w *Workflows) IndexBlock(ctx workflow.Context, in types.IndexBlockInput) (types.IndexBlockResult, error) {
	c := w.Chain
	lctx := workflow.WithLocalActivityOptions(ctx, c.Options.LocalActivity())
	var indexed bool
	if err := workflow.ExecuteLocalActivity(lctx, a.IsIndexed, in).Get(lctx, &indexed); err != nil {
		// The check only saves a fetch; the activity below retries
		// without end and its write is idempotent. Failing here instead
		// (the database down longer than retry.local's 20 s) left the
		// height to no one while a scheduler waited for it: 10 minutes
		// after a ClickHouse restart in the server-restart test. No
		// version marker: under the old code this failure closed the run
		// at once, so no running workflow takes the other branch on replay.
		workflow.GetLogger(ctx).Warn("is-indexed check failed; indexing the height anyway", "height", in.Height, "error", err)
		indexed = false
	}
	if indexed {
		return types.IndexBlockResult{AlreadyIndexed: true}, nil
	}
	actx := workflow.WithActivityOptions(ctx, c.Options.IndexActivity())
	var res types.IndexBlockResult
	if err := workflow.ExecuteActivity(actx, a.IndexBlock, in).Get(actx, &res); err != nil {
		return types.IndexBlockResult{}, err
	}
	return res, nil
}
