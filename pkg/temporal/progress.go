package temporal

import (
	"time"

	"github.com/tideline-dev/tideline/pkg/chaindata"
)

// The answer of a Scheduler's progress query (SchedulerProgressQuery): a
// contract between the workflow that answers it and every reader (the
// status view, the API's status route, the scheduler's gauges), kept here
// beside the query's name so that readers need not import the indexer.

// BucketProgress counts one level's heights.
type BucketProgress struct {
	Level int    `json:"level"` // the seed's level (pkg/indexer/types.PriorityLevel): 4 high … 1 ultra low
	Name  string `json:"name"`
	Total uint64 `json:"total"`
	Done  uint64 `json:"done"`
}

// SchedulerProgress answers the scheduler's `progress` query.
type SchedulerProgress struct {
	ChainID   string                `json:"chain_id"`
	Head      uint64                `json:"head"`
	Owned     chaindata.HeightRange `json:"owned"`
	Remaining uint64                `json:"remaining"` // heights not yet scheduled
	Scheduled uint64                `json:"scheduled"` // over all runs
	Buckets   []BucketProgress      `json:"buckets"`
	// Rate is heights scheduled per second of workflow time in this run.
	Rate float64 `json:"rate"`
	// Runs counts this run too.
	Runs int `json:"runs"`
	// InFlight is how many scheduled heights were not yet indexed at the
	// last check.
	InFlight uint64 `json:"in_flight"`
	// Elapsed is workflow time since this run began.
	Elapsed time.Duration `json:"elapsed"`
	// RangeSize is 0 when every height gets its own workflow; Ranges
	// counts the IndexRange workflows started over all runs.
	RangeSize uint64 `json:"range_size,omitempty"`
	Ranges    uint64 `json:"ranges,omitempty"`
	// Dropped counts heights dropped from the range because they lay
	// above the node's head.
	Dropped uint64 `json:"dropped,omitempty"`
	// Paused: the scheduler starts nothing until resumed.
	Paused bool `json:"paused,omitempty"`
}
