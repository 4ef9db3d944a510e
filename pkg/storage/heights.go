package storage

import (
	"context"
	"fmt"
	"math"

	"github.com/tideline-dev/tideline/pkg/chain"
)

// Sizes for MissingHeights and Watermark. A window is one grouped count
// query; it bounds the server memory of uniqExact to about a million
// values. A chunk is the unit that is skipped when full or read row by row
// when it has holes, so one ragged chunk transfers at most 10k numbers.
const (
	defaultScanWindow = 1_000_000
	defaultScanChunk  = 10_000
)

// IsIndexed reports whether the height is marked indexed.
func (c *ClickHouse) IsIndexed(ctx context.Context, chainID string, height uint64) (bool, error) {
	var n uint64
	if err := c.queryRow(ctx, indexedCountQuery{chainID, height}, &n); err != nil {
		return false, fmt.Errorf("storage: reading %s for chain %q height %d: %w", tableIndexedHeights, chainID, height, err)
	}
	return n > 0, nil
}

// LastIndexed returns the highest indexed height.
func (c *ClickHouse) LastIndexed(ctx context.Context, chainID string) (uint64, bool, error) {
	var top, n uint64
	if err := c.queryRow(ctx, lastIndexedQuery{chainID}, &top, &n); err != nil {
		return 0, false, fmt.Errorf("storage: reading highest %s for chain %q: %w", tableIndexedHeights, chainID, err)
	}
	return top, n > 0, nil
}

// Watermark returns the highest H >= from with [from, H] all indexed.
//
// It is the first hole in [from, LastIndexed] minus one, found with the
// same scan as MissingHeights: one grouped count per million heights, and
// at most one 10k chunk read row by row. That is a few queries however far
// the watermark has moved, with no window functions.
func (c *ClickHouse) Watermark(ctx context.Context, chainID string, from uint64) (uint64, bool, error) {
	top, found, err := c.LastIndexed(ctx, chainID)
	if err != nil || !found || top < from {
		return 0, false, err
	}
	holes, err := c.missingHeights(ctx, chainID, from, top, 1)
	if err != nil {
		return 0, false, fmt.Errorf("storage: watermark for chain %q from %d: %w", chainID, from, err)
	}
	switch {
	case len(holes) == 0:
		return top, true, nil
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
func (c *ClickHouse) MissingHeights(ctx context.Context, chainID string, from, to uint64, limit int) ([]uint64, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("storage: MissingHeights chain %q: limit must be positive, got %d", chainID, limit)
	}
	out, err := c.missingHeights(ctx, chainID, from, to, limit)
	if err != nil {
		return nil, fmt.Errorf("storage: missing heights for chain %q in [%d, %d]: %w", chainID, from, to, err)
	}
	return out, nil
}

func (c *ClickHouse) missingHeights(ctx context.Context, chainID string, from, to uint64, limit int) ([]uint64, error) {
	out := []uint64{}
	if from > to {
		return out, nil
	}
	chunk := c.scanChunk
	for lo := from; ; {
		hi := to
		if to-lo >= c.scanWindow {
			hi = lo + c.scanWindow - 1
		}
		counts, err := c.chunkCounts(ctx, chainID, lo, hi)
		if err != nil {
			return nil, err
		}
		// k stops by equality, not k <= hi/chunk, which would wrap
		// forever at the top of the uint64 range.
		for k, last := lo/chunk, hi/chunk; ; k++ {
			a := max(lo, k*chunk)
			b := min(hi, satAdd(k*chunk, chunk-1))
			switch have := counts[k]; {
			case have == b-a+1:
				// no hole
			case have == 0:
				for h := a; len(out) < limit; h++ {
					out = append(out, h)
					if h == b {
						break
					}
				}
			default:
				if out, err = c.walkHoles(ctx, chainID, a, b, limit, out); err != nil {
					return nil, err
				}
			}
			if len(out) >= limit {
				return out, nil
			}
			if k == last {
				break
			}
		}
		if hi == to {
			return out, nil
		}
		lo = hi + 1
	}
}

func (c *ClickHouse) chunkCounts(ctx context.Context, chainID string, from, to uint64) (map[uint64]uint64, error) {
	ctx, cancel := c.queryContext(ctx)
	defer cancel()
	query, args := chunkCountsQuery{chainID: chainID, from: from, to: to, chunk: c.scanChunk}.toSQL()
	rows, err := c.conn.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("counting %s in [%d, %d]: %w", tableIndexedHeights, from, to, err)
	}
	defer rows.Close()
	counts := map[uint64]uint64{}
	for rows.Next() {
		var k, n uint64
		if err := rows.Scan(&k, &n); err != nil {
			return nil, fmt.Errorf("counting %s in [%d, %d]: %w", tableIndexedHeights, from, to, err)
		}
		counts[k] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("counting %s in [%d, %d]: %w", tableIndexedHeights, from, to, err)
	}
	return counts, nil
}

// walkHoles appends to out the heights of [from, to] that are not indexed,
// stopping at limit.
func (c *ClickHouse) walkHoles(ctx context.Context, chainID string, from, to uint64, limit int, out []uint64) ([]uint64, error) {
	ctx, cancel := c.queryContext(ctx)
	defer cancel()
	query, args := indexedNumbersQuery{chainID, from, to}.toSQL()
	rows, err := c.conn.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("reading %s in [%d, %d]: %w", tableIndexedHeights, from, to, err)
	}
	defer rows.Close()
	// next is the lowest height not yet accounted for; done is set once
	// `to` is accounted for, since next cannot step past MaxUint64.
	next, done := from, false
	for len(out) < limit && rows.Next() {
		var n uint64
		if err := rows.Scan(&n); err != nil {
			return nil, fmt.Errorf("reading %s in [%d, %d]: %w", tableIndexedHeights, from, to, err)
		}
		for ; next < n && len(out) < limit; next++ {
			out = append(out, next)
		}
		if n == to {
			done = true
		}
		next = n + 1
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading %s in [%d, %d]: %w", tableIndexedHeights, from, to, err)
	}
	for ; !done && len(out) < limit; next++ {
		out = append(out, next)
		if next == to {
			break
		}
	}
	return out, nil
}

// BlockHashes returns the stored hash per height in [from, to] (newest
// write wins), for comparing with the chain after a reorg. Heights with no
// block row are absent from the map.
func (c *ClickHouse) BlockHashes(ctx context.Context, chainID string, from, to uint64) (map[uint64]string, error) {
	ctx, cancel := c.queryContext(ctx)
	defer cancel()
	query, args := blockHashesQuery{chainID, from, to}.toSQL()
	rows, err := c.conn.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("storage: reading %s hashes for chain %q in [%d, %d]: %w", tableBlocks, chainID, from, to, err)
	}
	defer rows.Close()
	out := map[uint64]string{}
	for rows.Next() {
		var (
			n    uint64
			hash string
		)
		if err := rows.Scan(&n, &hash); err != nil {
			return nil, fmt.Errorf("storage: reading %s hashes for chain %q in [%d, %d]: %w", tableBlocks, chainID, from, to, err)
		}
		out[n] = hash
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("storage: reading %s hashes for chain %q in [%d, %d]: %w", tableBlocks, chainID, from, to, err)
	}
	return out, nil
}

// CountRows counts the logical rows (one per key, with FINAL) of a chain's
// blocks, transactions and logs. It reads whole tables: for tests and
// operators, not for hot paths.
func (c *ClickHouse) CountRows(ctx context.Context, chainID string) (blocks, txs, logs uint64, err error) {
	counts := [3]uint64{}
	for i, table := range []string{tableBlocks, tableTransactions, tableLogs} {
		if err := c.queryRow(ctx, countFinalQuery{table, chainID}, &counts[i]); err != nil {
			return 0, 0, 0, fmt.Errorf("storage: counting %s for chain %q: %w", table, chainID, err)
		}
	}
	return counts[0], counts[1], counts[2], nil
}

// CountIndexed returns, per range, how many of its heights are indexed: the
// scheduler's in-flight window asks it about the batches it started.
func (c *ClickHouse) CountIndexed(ctx context.Context, chainID string, ranges []chain.HeightRange) ([]uint64, error) {
	out := make([]uint64, len(ranges))
	for i, r := range ranges {
		if r.To < r.From {
			continue
		}
		if err := c.queryRow(ctx, rangeCountQuery{chainID, r.From, r.To}, &out[i]); err != nil {
			return nil, fmt.Errorf("storage: counting %s for chain %q in [%d, %d]: %w", tableIndexedHeights, chainID, r.From, r.To, err)
		}
	}
	return out, nil
}

// MissingRanges lists the holes of [from, to] as ascending ranges, covering
// at most maxHeights heights (the lowest ones).
func (c *ClickHouse) MissingRanges(ctx context.Context, chainID string, from, to uint64, maxHeights int) ([]chain.HeightRange, error) {
	hs, err := c.MissingHeights(ctx, chainID, from, to, maxHeights)
	if err != nil {
		return nil, err
	}
	return chain.ToRanges(hs), nil
}

// satAdd adds without wrapping past MaxUint64.
func satAdd(a, b uint64) uint64 {
	if s := a + b; s >= a {
		return s
	}
	return math.MaxUint64
}
