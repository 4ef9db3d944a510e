package types

import (
	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// SchedulerInput is the input of a SchedulerWorkflow run. The first run gets
// the ranges to catch up; each ContinueAsNew carries what is left and the
// counters, so every height is scheduled exactly once across all runs.
type SchedulerInput struct {
	ChainID string `json:"chain_id"`
	// Head is the chain head when the catch-up began: ages, hence levels,
	// are measured from it for the scheduler's whole life, so a height's
	// level never changes between runs.
	Head uint64 `json:"head"`
	// Remaining holds the heights not yet scheduled, as ascending disjoint
	// ranges. The scheduler takes from the top (newest first).
	Remaining []chaindata.HeightRange `json:"remaining"`
	// State is zero in the first run.
	State SchedulerState `json:"state"`
}

// SchedulerState is what carries over from one run to the next.
type SchedulerState struct {
	Runs      int                       `json:"runs"` // runs completed before this one
	Scheduled uint64                    `json:"scheduled"`
	Buckets   []temporal.BucketProgress `json:"buckets"` // High, Medium, Low, UltraLow
	// Owned is the span of all heights the scheduler was given: HeadScan
	// and GapScan leave it alone.
	Owned chaindata.HeightRange `json:"owned"`
	// Pending holds started batches not yet seen fully indexed, and
	// InFlight how many of their heights were unindexed at the last look:
	// the in-flight window, carried so a new run does not overfill it.
	Pending  []chaindata.HeightRange `json:"pending"`
	InFlight uint64                  `json:"in_flight"`
	// RangeSize is the heights per IndexRange workflow, chosen in the
	// first run for the scheduler's whole life; 0 is one workflow per
	// height. The newest SingleHeights heights below Head are started one
	// per height even with ranges.
	RangeSize     uint64 `json:"range_size,omitempty"`
	SingleHeights uint64 `json:"single_heights,omitempty"`
	// Ranges counts the IndexRange workflows started.
	Ranges uint64 `json:"ranges,omitempty"`
	// Dropped counts heights dropped because they lay above the node's
	// head (started or not): the scans start them once they exist.
	Dropped uint64 `json:"dropped,omitempty"`
	// Paused is set while the scheduler is paused (SchedulerPauseSignal):
	// it starts nothing until resumed.
	Paused bool `json:"paused,omitempty"`
}

// SchedulerResult is what a finished scheduler reports.
type SchedulerResult struct {
	Scheduled uint64                    `json:"scheduled"`
	Runs      int                       `json:"runs"`
	Buckets   []temporal.BucketProgress `json:"buckets"`
}

// SchedulerStatus says whether a chain's scheduler runs and what it owns.
type SchedulerStatus struct {
	Running bool                  `json:"running"`
	Owned   chaindata.HeightRange `json:"owned"`
}

// StartSchedulerResult says whether this call started the scheduler.
type StartSchedulerResult struct {
	Started bool `json:"started"`
	// AlreadyRunning is true when Temporal refused the start because a
	// scheduler with the chain's fixed ID runs.
	AlreadyRunning bool `json:"already_running"`
	// CaughtUp is true when the watermark, read again just before the
	// start, had passed every height asked for: nothing was started.
	CaughtUp bool `json:"caught_up,omitempty"`
}
