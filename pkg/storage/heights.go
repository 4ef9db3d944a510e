package storage

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/tideline-dev/tideline/pkg/chaindata"
)

// IsIndexed reports whether the height is marked indexed.
func (c *Progress) IsIndexed(ctx context.Context, chainID string, height uint64) (bool, error) {
	var n uint64
	if err := c.queryRow(ctx, indexedCountQuery{chainID, height}, &n); err != nil {
		return false, fmt.Errorf("storage: reading %s for chain %q height %d: %w", tableIndexedHeights, chainID, height, err)
	}
	return n > 0, nil
}

// LastIndexed returns the highest indexed height.
//
// A max() over the chain's marks reads all of them (seconds at ten
// million). Instead the partitions of indexed_heights (a million heights
// each) are tried from the highest down, and the first that holds a mark of
// the chain answers: one partition's marks are read, plus a primary-key
// lookup per higher partition that holds only other chains.
func (c *Progress) LastIndexed(ctx context.Context, chainID string) (uint64, bool, error) {
	fail := func(err error) (uint64, bool, error) {
		return 0, false, fmt.Errorf("storage: reading highest %s for chain %q: %w", tableIndexedHeights, chainID, err)
	}
	parts, err := c.partitions(ctx, tableIndexedHeights)
	if err != nil {
		return fail(err)
	}
	for _, p := range slices.Backward(parts) {
		var top, n uint64
		from, to := satMul(p, partitionHeights), satAdd(satMul(p, partitionHeights), partitionHeights-1)
		if err := c.queryRow(ctx, lastIndexedQuery{chainID, from, to}, &top, &n); err != nil {
			return fail(err)
		}
		if n > 0 {
			return top, true, nil
		}
	}
	return 0, false, nil
}

// partitionHeights is the width of a partition of the data tables: every
// table is PARTITION BY intDiv(<height>, 1000000) (migrations 0001-0004).
const partitionHeights = 1_000_000

// partitions lists, ascending, the partitions of a data table that have
// active parts: intDiv(height, partitionHeights) of the heights in them.
func (c *db) partitions(ctx context.Context, table string) ([]uint64, error) {
	ctx, cancel := c.queryContext(ctx)
	defer cancel()
	query, args := partitionsQuery{c.cfg.Database, table}.toSQL()
	rows, err := c.conn.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []uint64
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		p, err := strconv.ParseUint(id, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("partition id %q of %s is not intDiv(height, %d)", id, table, partitionHeights)
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	slices.Sort(out)
	return out, nil
}

// Watermark returns the highest H >= from with [from, H] all indexed.
//
// It is the first hole at or above from, minus one, found with the same
// forward scan as MissingHeights. The scan's windows start at one chunk and
// grow tenfold, so the cost follows the distance from `from` to the first
// hole (the progress since the saved watermark, for the activity), not the
// chain's length; and it needs no LastIndexed, which reads every mark of
// the chain.
func (c *Progress) Watermark(ctx context.Context, chainID string, from uint64) (uint64, bool, error) {
	holes, err := c.missingHeights(ctx, chainID, from, math.MaxUint64, 1)
	if err != nil {
		return 0, false, fmt.Errorf("storage: watermark for chain %q from %d: %w", chainID, from, err)
	}
	switch {
	case len(holes) == 0:
		return math.MaxUint64, true, nil
	case holes[0] == from:
		return 0, false, nil
	default:
		return holes[0] - 1, true, nil
	}
}

// MissingHeights lists, in ascending order, up to limit heights in
// [from, to] that are not indexed.
//
// The range is scanned in windows of a million heights. Per window one
// query counts the distinct indexed heights of each aligned 10k chunk; a
// full chunk is skipped, an empty one is all holes, and only a partly
// filled one is read (its indexed heights, in order) and walked in Go. The
// scan stops as soon as limit holes are found, so the cost follows the
// holes and the distance to them, not the size of the chain.
func (c *Progress) MissingHeights(ctx context.Context, chainID string, from, to uint64, limit int) ([]uint64, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("storage: MissingHeights chain %q: limit must be positive, got %d", chainID, limit)
	}
	out, err := c.missingHeights(ctx, chainID, from, to, limit)
	if err != nil {
		return nil, fmt.Errorf("storage: missing heights for chain %q in [%d, %d]: %w", chainID, from, to, err)
	}
	return out, nil
}

// CountIndexed returns, per range, how many of its heights are indexed: the
// scheduler's in-flight window asks it about the batches it started. The
// ranges go to the server countRangesPerQuery at a time, one query each.
func (c *Progress) CountIndexed(ctx context.Context, chainID string, ranges []chaindata.HeightRange) ([]uint64, error) {
	out := make([]uint64, len(ranges))
	// Only non-empty ranges are asked about.
	var idx []int
	for i, r := range ranges {
		if r.To >= r.From {
			idx = append(idx, i)
		}
	}
	// A range of many chunks is counted chunk by chunk (recorded chunks
	// cost nothing); the small ones, the scheduler's, in batched queries.
	var small []int
	for _, i := range idx {
		r := ranges[i]
		if r.To-r.From < countByChunksFrom*c.scanChunk {
			small = append(small, i)
			continue
		}
		n, err := c.countIndexed(ctx, chainID, r.From, r.To)
		if err != nil {
			return nil, fmt.Errorf("storage: counting %s for chain %q in [%d, %d]: %w", tableIndexedHeights, chainID, r.From, r.To, err)
		}
		out[i] = n
	}
	for lo := 0; lo < len(small); lo += countRangesPerQuery {
		hi := min(lo+countRangesPerQuery, len(small))
		batch := make([]chaindata.HeightRange, hi-lo)
		for j, i := range small[lo:hi] {
			batch[j] = ranges[i]
		}
		counts := make([]uint64, len(batch))
		dest := make([]any, len(counts))
		for i := range counts {
			dest[i] = &counts[i]
		}
		if err := c.queryRow(ctx, rangeCountsQuery{chainID, batch}, dest...); err != nil {
			span := chaindata.Span(batch)
			return nil, fmt.Errorf("storage: counting %s for chain %q in %d ranges within [%d, %d]: %w",
				tableIndexedHeights, chainID, len(batch), span.From, span.To, err)
		}
		for j, n := range counts {
			out[small[lo+j]] = n
		}
	}
	return out, nil
}

// countRangesPerQuery bounds the text of one CountIndexed query, and
// countByChunksFrom is the length, in chunks, from which a range is counted
// chunk by chunk instead.
const (
	countRangesPerQuery = 100
	countByChunksFrom   = 10
)

// MissingRanges lists the holes of [from, to] as ascending ranges, covering
// at most maxHeights heights (the lowest ones).
func (c *Progress) MissingRanges(ctx context.Context, chainID string, from, to uint64, maxHeights int) ([]chaindata.HeightRange, error) {
	hs, err := c.MissingHeights(ctx, chainID, from, to, maxHeights)
	if err != nil {
		return nil, err
	}
	return chaindata.ToRanges(hs), nil
}

// satMul multiplies without wrapping past MaxUint64.
func satMul(a, b uint64) uint64 {
	if a != 0 && b > math.MaxUint64/a {
		return math.MaxUint64
	}
	return a * b
}

// satAdd adds without wrapping past MaxUint64.
func satAdd(a, b uint64) uint64 {
	if s := a + b; s >= a {
		return s
	}
	return math.MaxUint64
}
