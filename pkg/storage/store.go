// Package storage writes indexed chain data to ClickHouse and answers the
// questions the scheduler asks (which heights are indexed, where the gaps
// are). Tables are ReplacingMergeTree keyed by (chain_id, height), so writing
// a height twice leaves one logical row.
package storage

import (
	"context"

	"github.com/tideline-dev/tideline/pkg/chain"
)

// Store is what the indexer needs from its database.
type Store interface {
	// WriteBlocks writes N >= 1 heights (distinct, any order) as one unit:
	// per table one insert, the look-up tables first (rows found by hash,
	// address and time, with a tombstone for every stored key the new
	// blocks lack), then transactions and logs (with a tombstone,
	// is_canonical = 0, for every stored canonical position the new block
	// lacks, so a reorg's shorter block leaves exactly its own rows), then
	// the block rows (what the reorg check compares with the node), then
	// the indexed_heights marks last. A failure part-way leaves the heights
	// unmarked, and they are written again. Every path writes through it:
	// a live block, a pushed block, a reorg repair, a range of the backlog.
	WriteBlocks(ctx context.Context, chainID string, blocks []*chain.BlockData) error
	// RemoveBlock supersedes every row of a height, and every look-up row
	// pointing at them, with tombstones, for a height the node no longer
	// has. The mark stays.
	RemoveBlock(ctx context.Context, chainID string, height uint64) error
	// StoredBlocks returns, ascending, the newest block row of each height
	// in [from, to] that has one: hash, parent hash, canonical or not.
	StoredBlocks(ctx context.Context, chainID string, from, to uint64) ([]chain.StoredBlock, error)
	// IsIndexed reports whether the height is marked indexed.
	IsIndexed(ctx context.Context, chainID string, height uint64) (bool, error)
	// LastIndexed returns the highest indexed height; found is false when
	// nothing is indexed for the chain.
	LastIndexed(ctx context.Context, chainID string) (height uint64, found bool, err error)
	// Watermark returns the highest H >= from such that every height in
	// [from, H] is indexed; found is false when `from` itself is not.
	Watermark(ctx context.Context, chainID string, from uint64) (height uint64, found bool, err error)
	// MissingHeights lists, in ascending order, up to limit heights in
	// [from, to] that are not indexed.
	MissingHeights(ctx context.Context, chainID string, from, to uint64, limit int) ([]uint64, error)
	// MissingRanges lists the holes of [from, to] as ascending ranges,
	// covering at most maxHeights heights.
	MissingRanges(ctx context.Context, chainID string, from, to uint64, maxHeights int) ([]chain.HeightRange, error)
	// CountIndexed returns, per range, how many of its heights are indexed.
	CountIndexed(ctx context.Context, chainID string, ranges []chain.HeightRange) ([]uint64, error)
	// SaveState and LoadState keep a per-chain singleton value (e.g. the
	// watermark under StateWatermark).
	SaveState(ctx context.Context, chainID, key string, value uint64) error
	LoadState(ctx context.Context, chainID, key string) (uint64, bool, error)
	// Derived is what the aggregator and retention read and write.
	Derived
	// Close releases the connection.
	Close() error
}
