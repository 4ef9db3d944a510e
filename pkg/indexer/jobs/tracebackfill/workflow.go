package tracebackfill

import (
	"go.temporal.io/sdk/workflow"

	"github.com/tideline-dev/tideline/pkg/temporal"
)

// Input is the input of one TraceBackfill run (its Schedule's argument).
type Input struct {
	ChainID string `json:"chain_id"`
}

// Result says what one backfill activity did. The pass under way covers
// [Floor, Top], newest first; Next is the next height it looks at (with
// Running); Done is the top of the last complete pass.
type Result struct {
	Traced  uint64 `json:"traced"`            // heights whose traces it wrote
	Frames  uint64 `json:"frames"`            // call frames written
	Failed  uint64 `json:"failed,omitempty"`  // heights whose trace it could not have
	Skipped string `json:"skipped,omitempty"` // why it did nothing, if it did nothing
	Running bool   `json:"running"`
	Top     uint64 `json:"top"`
	Floor   uint64 `json:"floor"`
	Next    uint64 `json:"next,omitempty"`
	Done    uint64 `json:"done,omitempty"`
}

// Workflow runs from the job's Schedule every traces.backfill.interval
// while the chain traces: its activity fills the traces of heights indexed
// without them, newest first, for a few minutes, its progress saved in
// chain_state, so the Schedule's next run goes on from there (`indexer
// status` shows it). The Web UI shows each run's result (heights traced,
// where the pass is).
func (j *Job) Workflow(ctx workflow.Context, in Input) (Result, error) {
	return temporal.OneActivity[Input, Result](ctx, activityOptions(j.Options), ActivityName, in)
}
