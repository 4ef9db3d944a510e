package workflow

import (
	"go.temporal.io/sdk/workflow"

	"github.com/tideline-dev/tideline/pkg/indexer/types"
)

// IndexBlock indexes one height: a cheap check first (the height may have
// been indexed by an earlier run or the other source), then one activity
// that fetches and writes the block. Its ID is fixed per (chain, height).
func (w *Workflows) IndexBlock(ctx workflow.Context, in types.IndexBlockInput) (types.IndexBlockResult, error) {
	o, err := w.options(in.ChainID)
	if err != nil {
		return types.IndexBlockResult{}, err
	}
	lctx := workflow.WithLocalActivityOptions(ctx, o.LocalActivity())
	var indexed bool
	if err := workflow.ExecuteLocalActivity(lctx, a.IsIndexed, in).Get(lctx, &indexed); err != nil {
		return types.IndexBlockResult{}, err
	}
	if indexed {
		return types.IndexBlockResult{AlreadyIndexed: true}, nil
	}
	actx := workflow.WithActivityOptions(ctx, o.IndexActivity())
	var res types.IndexBlockResult
	if err := workflow.ExecuteActivity(actx, a.IndexBlock, in).Get(actx, &res); err != nil {
		return types.IndexBlockResult{}, err
	}
	return res, nil
}
