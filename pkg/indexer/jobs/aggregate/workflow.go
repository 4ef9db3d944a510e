package aggregate

import (
	"go.temporal.io/sdk/workflow"

	"github.com/tideline-dev/tideline/pkg/temporal"
)

// Input is the input of one Aggregate run (its Schedule's argument): the
// chain ID only, as for the scans.
type Input struct {
	ChainID string `json:"chain_id"`
}

// Result says what one Aggregate activity did.
type Result struct {
	// Height is the aggregator's height at the end (every height from the
	// start height up to it is counted); HasHeight is false while nothing
	// is counted.
	Height    uint64 `json:"height"`
	HasHeight bool   `json:"has_height"`
	// Counted is how many heights were written (again, after a rewind).
	Counted uint64 `json:"counted"`
	// Chunks is how many inserts that took.
	Chunks int `json:"chunks"`
	// Watermark is the watermark it counted up to (never past).
	Watermark uint64 `json:"watermark"`
	// Rewinds counts the reorganisations below its height it found, and
	// RewoundTo is the height it went back to for the last one.
	Rewinds   int    `json:"rewinds,omitempty"`
	RewoundTo uint64 `json:"rewound_to,omitempty"`
	// More is set when the attempt stopped at its time budget with heights
	// left below the watermark: the next run goes on.
	More bool `json:"more,omitempty"`
	// Waiting says why it stopped below the watermark, if it did for
	// another reason (a height without a canonical block, a block whose
	// parent is not the block counted below it: a repair in progress).
	Waiting string `json:"waiting,omitempty"`
}

// Workflow runs from the job's Schedule every aggregator.interval
// (overlap: skip) and keeps the chain's aggregates table up to the
// watermark: its one activity counts from where the last run stopped, in
// chunks while behind and single blocks at the head, rewinds below a
// reorganisation, and returns within its time budget (the next run goes
// on). A run is one activity, so the Web UI shows each one's result (the
// aggregator's height, heights counted, rewinds) and any failure.
func (j *Job) Workflow(ctx workflow.Context, in Input) (Result, error) {
	return temporal.OneActivity[Input, Result](ctx, activityOptions(j.Options), ActivityName, in)
}
