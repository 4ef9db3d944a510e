// Package types holds the inputs and results of workflows and activities
// and the scheduling levels. The chain model (blocks, heights, ranges) is in
// pkg/chain.
package types

import "github.com/tideline-dev/tideline/pkg/chain"

// HeadScanInput is the input of one HeadScan run (the Schedule's argument).
// It carries the chain ID only: settings come from the worker's config and
// secrets never enter workflow histories.
type HeadScanInput struct {
	ChainID string `json:"chain_id"`
}

// HeadScanResult says what one HeadScan run saw and did.
type HeadScanResult struct {
	Head         uint64 `json:"head"`
	Watermark    uint64 `json:"watermark"`
	HasWatermark bool   `json:"has_watermark"`
	Pending      uint64 `json:"pending"` // heights above the watermark, up to head
	Mode         string `json:"mode"`    // normal or catchup
	Started      int    `json:"started"` // IndexBlockWorkflows started directly
	// SchedulerStarted is true when this run started the SchedulerWorkflow.
	SchedulerStarted bool `json:"scheduler_started"`
	// LeftToPush counts missing heights not started because the push
	// source is expected to start them (see PushStatus).
	LeftToPush int `json:"left_to_push,omitempty"`
}

// PushStatus is what HeadScan reads of the chain's push source in the
// worker process (through a local activity, so it is in the history).
type PushStatus struct {
	// Enabled is false when the chain has no push source here.
	Enabled bool `json:"enabled"`
	// Healthy: subscribed, and a head delivered within stall_after.
	Healthy bool `json:"healthy"`
	// Latest is the highest height push has delivered: started its
	// IndexBlockWorkflow, found it started, or failed to start it (pull
	// then takes it).
	Latest uint64 `json:"latest"`
	// LagThreshold is push.lag_threshold: heights in (Latest, Latest +
	// LagThreshold] are left to push while it is healthy.
	LagThreshold uint64 `json:"lag_threshold"`
}

// HeadScan modes.
const (
	ModeNormal  = "normal"
	ModeCatchup = "catchup"
)

// IndexMode is the indexing path that started a workflow: the IndexMode
// search attribute of every workflow tideline starts, and the mode label
// of indexer_heights_indexed_total.
type IndexMode string

// The indexing paths.
const (
	// IndexModeLive: the push source started the height at a new head.
	IndexModeLive IndexMode = "live"
	// IndexModeDirect: HeadScan started the height (the pull path).
	IndexModeDirect IndexMode = "direct"
	// IndexModeScheduler: the catch-up scheduler started it.
	IndexModeScheduler IndexMode = "scheduler"
	// IndexModeGap: GapScan found it missing and started it.
	IndexModeGap IndexMode = "gap"
	// IndexModeRange: part of a range of the backlog (an IndexRange, or a
	// height a range handed to its own IndexBlock).
	IndexModeRange IndexMode = "range"
)

// The modes of the workflows that keep derived data, not indexing paths:
// the IndexMode search attribute of their runs, never a label of
// indexer_heights_indexed_total (they index nothing).
const (
	// IndexModeAggregate: the aggregator (cumulative counts per height).
	IndexModeAggregate IndexMode = "aggregate"
	// IndexModePrune: retention, deleting old detailed rows.
	IndexModePrune IndexMode = "prune"
)

// IndexModes lists every mode.
var IndexModes = []IndexMode{IndexModeLive, IndexModeDirect, IndexModeScheduler, IndexModeGap, IndexModeRange}

// Label is the mode as a metric label: "unknown" for an input recorded
// before the mode travelled with it.
func (m IndexMode) Label() string {
	if m == "" {
		return "unknown"
	}
	return string(m)
}

// IndexBlockInput is the input of one IndexBlockWorkflow.
type IndexBlockInput struct {
	ChainID string `json:"chain_id"`
	Height  uint64 `json:"height"`
	// Mode is who started the workflow (empty in runs started before the
	// field existed).
	Mode IndexMode `json:"mode,omitempty"`
}

// IndexBlockResult says what was written for one height.
type IndexBlockResult struct {
	Hash           string `json:"hash"`
	TxCount        uint32 `json:"tx_count"`
	LogCount       uint32 `json:"log_count"`
	AlreadyIndexed bool   `json:"already_indexed"`
	// NotProduced is set when the node has no block at the height and its
	// head is below it: nothing was written, and later scans start the
	// height again once it exists.
	NotProduced bool `json:"not_produced,omitempty"`
	// Reorg is set when indexing this height found a reorganisation near
	// the head and re-indexed the canonical blocks below it.
	Reorg *ReorgResult `json:"reorg,omitempty"`
}

// StartIndexInput asks for IndexBlockWorkflows for the given heights.
type StartIndexInput struct {
	ChainID string        `json:"chain_id"`
	Heights []uint64      `json:"heights"`
	Level   PriorityLevel `json:"level"`
	// SkipIndexed asks to leave out heights already indexed: a catch-up
	// range may hold some, and the push source may have indexed a height
	// since a scan listed it missing.
	SkipIndexed bool `json:"skip_indexed"`
	// Mode is the path starting them (direct, scheduler, gap or range);
	// empty in calls recorded before it existed, which started heights
	// as direct.
	Mode IndexMode `json:"mode,omitempty"`
}

// StartIndexResult counts what a StartIndex call did.
type StartIndexResult struct {
	// Started counts the workflows started.
	Started int `json:"started"`
	// Skipped counts heights left out because they were indexed already.
	Skipped int `json:"skipped"`
	// Running counts heights whose workflow was running already: Temporal
	// refused the second start (a duplicate).
	Running int `json:"running,omitempty"`
}

// WatermarkResult is the contiguous progress of a chain.
type WatermarkResult struct {
	Height uint64 `json:"height"`
	// Found is false when the chain's start height itself is not indexed.
	Found bool `json:"found"`
	// Floor is the lowest height the scans may index: the start height,
	// or just above the pruned height once retention removed heights on
	// purpose. 0 in results recorded before it existed (read as the start
	// height).
	Floor uint64 `json:"floor,omitempty"`
}

// MissingInput asks for unindexed heights in a range.
type MissingInput struct {
	ChainID string            `json:"chain_id"`
	Range   chain.HeightRange `json:"range"`
	Limit   int               `json:"limit"`
}

// GapScanInput is the input of one GapScan run (the Schedule's argument).
type GapScanInput struct {
	ChainID string `json:"chain_id"`
}

// GapScanResult says what one GapScan run found and did.
type GapScanResult struct {
	Head             uint64 `json:"head"`
	Missing          uint64 `json:"missing"`
	Started          int    `json:"started"`
	SchedulerStarted bool   `json:"scheduler_started"`
}
