package types

import "github.com/tideline-dev/tideline/pkg/chaindata"

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
	ChainID string                `json:"chain_id"`
	Range   chaindata.HeightRange `json:"range"`
	Limit   int                   `json:"limit"`
}

// CountIndexedInput asks how many heights of the ranges are indexed.
type CountIndexedInput struct {
	ChainID string                  `json:"chain_id"`
	Ranges  []chaindata.HeightRange `json:"ranges"`
}
