package workflow

import (
	"go.temporal.io/sdk/workflow"

	"github.com/tideline-dev/tideline/pkg/indexer/types"
)

// TokenMetadata's activity (pkg/indexer/activity/token_metadata.go):
// TokenMetadata, a regular activity on the admin queue with heartbeats.

// TokenMetadata runs from a Temporal Schedule every
// temporal.TokenMetadataInterval (overlap: skip) and gives every token
// with a transfer up to the watermark a token_metadata row, asked of its
// contract once, off the write path: its one activity goes on from where
// the last run stopped and returns within its time budget. A run is one
// activity, so the Web UI shows each one's result (the height reached,
// tokens asked) and any failure.
func (w *Workflows) TokenMetadata(ctx workflow.Context, in types.TokenMetadataInput) (types.TokenMetadataResult, error) {
	actx := workflow.WithActivityOptions(ctx, w.Chain.Options.TokenMetadataActivity())
	var res types.TokenMetadataResult
	err := workflow.ExecuteActivity(actx, a.TokenMetadata, in).Get(actx, &res)
	return res, err
}
