package types

import "github.com/tideline-dev/tideline/pkg/chaindata"

// IndexRangeInput is the input of one IndexRange workflow and of its
// activity: a range of backlog heights of one level.
type IndexRangeInput struct {
	ChainID string                `json:"chain_id"`
	Range   chaindata.HeightRange `json:"range"`
	// Level is the range's bucket; heights handed off to their own
	// IndexBlockWorkflow start at its priority.
	Level PriorityLevel `json:"level"`
}

// IndexRangeResult says what one range activity did.
type IndexRangeResult struct {
	// Indexed counts heights this activity wrote (over all its attempts,
	// as far as the heartbeats tell), Skipped the ones found indexed.
	Indexed uint64 `json:"indexed"`
	Skipped uint64 `json:"skipped"`
	Txs     uint64 `json:"txs"`
	Logs    uint64 `json:"logs"`
	// Failed lists the heights that kept failing: the workflow hands each
	// to its own IndexBlockWorkflow.
	Failed []FailedHeight `json:"failed,omitempty"`
}

// FailedHeight is a height a range activity gave up on, and why (an
// activity error type: MalformedResponse, BlockNotFound, RPCError,
// StorageError). The full error is in the worker's log.
type FailedHeight struct {
	Height uint64 `json:"height"`
	Reason string `json:"reason"`
}

// IndexRangeWorkflowResult is what an IndexRange workflow reports.
type IndexRangeWorkflowResult struct {
	IndexRangeResult
	// HandedOff counts the IndexBlockWorkflows started for failed heights.
	HandedOff int `json:"handed_off"`
}

// RangeProgress is the heartbeat of a range activity: how far it got. A
// retry reads it to count what earlier attempts wrote; which heights are
// left it asks the database.
type RangeProgress struct {
	Indexed uint64 `json:"indexed"`
	Txs     uint64 `json:"txs"`
	Logs    uint64 `json:"logs"`
}

// StartRangeInput asks for the IndexRange workflow of one range.
type StartRangeInput struct {
	ChainID string                `json:"chain_id"`
	Range   chaindata.HeightRange `json:"range"`
	Level   PriorityLevel         `json:"level"`
}
