package retention

import (
	"go.temporal.io/sdk/workflow"

	"github.com/tideline-dev/tideline/pkg/temporal"
)

// Input is the input of one Prune run (its Schedule's argument).
type Input struct {
	ChainID string `json:"chain_id"`
}

// Result says what one Prune activity did.
type Result struct {
	// PrunedHeight is the chain's pruned height at the end (HasPruned
	// false: nothing pruned yet).
	PrunedHeight uint64 `json:"pruned_height"`
	HasPruned    bool   `json:"has_pruned"`
	// Target is the height retention allows pruning up to now (the
	// lowest of its limits); Raised tells whether PrunedHeight was raised
	// to it by this run.
	Target uint64 `json:"target"`
	Raised bool   `json:"raised,omitempty"`
	// Skipped says why nothing was deleted, if nothing was.
	Skipped string `json:"skipped,omitempty"`
	// Dropped lists "table/partition" of the partitions dropped, Mutated
	// the tables a DELETE mutation was started on, Reindex the other
	// chains whose marks of a dropped partition were deleted.
	Dropped []string `json:"dropped,omitempty"`
	Mutated []string `json:"mutated,omitempty"`
	Reindex []string `json:"reindex,omitempty"`
}

// Workflow runs from the job's Schedule every retention.interval, only for
// a chain with retention on: its activity raises the chain's pruned
// height to what retention allows (never above the watermark minus the
// retention margin, nor above the aggregator's height) and deletes the
// detailed rows at or below it. The Web UI shows each run's result (pruned
// height, partitions dropped, mutations started, or why it waited).
func (j *Job) Workflow(ctx workflow.Context, in Input) (Result, error) {
	return temporal.OneActivity[Input, Result](ctx, activityOptions(j.Options), ActivityName, in)
}
