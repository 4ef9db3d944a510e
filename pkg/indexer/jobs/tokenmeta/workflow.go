package tokenmeta

import (
	"go.temporal.io/sdk/workflow"

	"github.com/tideline-dev/tideline/pkg/temporal"
)

// Input is the input of one TokenMetadata run (its Schedule's argument):
// the chain ID only.
type Input struct {
	ChainID string `json:"chain_id"`
}

// Result says what one TokenMetadata activity did.
type Result struct {
	// Height is how far every token with a transfer has metadata (the
	// token_metadata_height of chain_state); HasHeight is false before the
	// first chunk.
	Height    uint64 `json:"height"`
	HasHeight bool   `json:"has_height"`
	// Watermark is the height it worked up to (never past).
	Watermark uint64 `json:"watermark"`
	// Tokens is how many tokens it asked; Answered how many answered at
	// least one of name, symbol, decimals and total supply.
	Tokens   int `json:"tokens"`
	Answered int `json:"answered"`
	// More is set when it stopped at its time budget below the watermark.
	More bool `json:"more,omitempty"`
}

// Workflow runs from the job's Schedule every Interval (overlap: skip) and
// gives every token with a transfer up to the watermark a token_metadata
// row, asked of its contract once, off the write path: its one activity
// goes on from where the last run stopped and returns within its time
// budget. A run is one activity, so the Web UI shows each one's result
// (the height reached, tokens asked) and any failure.
func (j *Job) Workflow(ctx workflow.Context, in Input) (Result, error) {
	return temporal.OneActivity[Input, Result](ctx, activityOptions(j.Options), ActivityName, in)
}
