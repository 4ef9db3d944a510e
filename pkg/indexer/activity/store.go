package activity

import (
	"context"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/storage"
)

// Store is what the activities need of the database: the one write path,
// the progress questions of the scans and the scheduler, per-chain state,
// (the side jobs' are their packages' own, pkg/indexer/jobs). *storage.ClickHouse
// implements it; the query API and the chain registry declare their own.
type Store interface {
	// WriteBlocks writes N >= 1 heights (distinct, any order) as one unit,
	// the indexed_heights marks last: a failure part-way leaves the heights
	// unmarked, and they are written again (storage's README says how
	// tombstones and look-up rows keep a rewrite exact). Every path writes
	// through it: a live block, a pushed block, a reorg repair, a range.
	WriteBlocks(ctx context.Context, chainID string, blocks []*chaindata.BlockData) error
	// RemoveBlock supersedes every row of a height the node no longer has
	// with tombstones; the mark stays.
	RemoveBlock(ctx context.Context, chainID string, height uint64) error
	// StoredBlocks returns, ascending, the newest block row of each height
	// in [from, to] that has one: hash, parent hash, canonical or not.
	StoredBlocks(ctx context.Context, chainID string, from, to uint64) ([]chaindata.StoredBlock, error)

	// IsIndexed reports whether the height is marked indexed.
	IsIndexed(ctx context.Context, chainID string, height uint64) (bool, error)
	// LastIndexed returns the highest indexed height; found is false when
	// nothing is indexed for the chain.
	LastIndexed(ctx context.Context, chainID string) (height uint64, found bool, err error)
	// Watermark returns the highest H >= from such that every height in
	// [from, H] is indexed; found is false when `from` itself is not.
	Watermark(ctx context.Context, chainID string, from uint64) (height uint64, found bool, err error)
	// MissingHeights lists, ascending, up to limit unindexed heights of
	// [from, to].
	MissingHeights(ctx context.Context, chainID string, from, to uint64, limit int) ([]uint64, error)
	// MissingRanges lists the holes of [from, to] as ascending ranges,
	// covering at most maxHeights heights.
	MissingRanges(ctx context.Context, chainID string, from, to uint64, maxHeights int) ([]chaindata.HeightRange, error)
	// CountIndexed returns, per range, how many of its heights are indexed.
	CountIndexed(ctx context.Context, chainID string, ranges []chaindata.HeightRange) ([]uint64, error)

	// SaveState and LoadState keep a per-chain singleton value (the
	// watermark, the aggregator's and the pruned height).
	SaveState(ctx context.Context, chainID, key string, value uint64) error
	LoadState(ctx context.Context, chainID, key string) (uint64, bool, error)
}

var _ Store = (*storage.ClickHouse)(nil)
