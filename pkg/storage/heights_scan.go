package storage

import (
	"context"
	"fmt"
	"time"

	"github.com/tideline-dev/tideline/pkg/chaindata"
)

// The scan behind MissingHeights, Watermark, CountIndexed and
// MissingRanges (heights.go): windows of chunks, full chunks recorded in
// indexed_chunks and skipped unread, the others counted and, when ragged,
// read row by row (README, "Scheduler queries").

// Sizes for MissingHeights and Watermark. A window is one grouped count
// query; it bounds the server memory of uniqExact to about a million
// values. A chunk is the unit that is skipped when full or read row by row
// when it has holes, so one ragged chunk transfers at most 10k numbers.
const (
	defaultScanWindow = 1_000_000
	defaultScanChunk  = 10_000
)

func (c *db) missingHeights(ctx context.Context, chainID string, from, to uint64, limit int) ([]uint64, error) {
	out := []uint64{}
	err := c.scanChunks(ctx, chainID, from, to, func(a, b, have uint64) (bool, error) {
		var err error
		switch {
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
			out, err = c.walkHoles(ctx, chainID, a, b, limit, out)
		}
		return len(out) >= limit, err
	})
	return out, err
}

// countIndexed counts the distinct marks of [from, to] chunk by chunk, so
// that recorded chunks cost nothing: for ranges of many chunks.
func (c *db) countIndexed(ctx context.Context, chainID string, from, to uint64) (uint64, error) {
	var n uint64
	err := c.scanChunks(ctx, chainID, from, to, func(_, _, have uint64) (bool, error) {
		n += have
		return false, nil
	})
	return n, err
}

// scanChunks calls visit, in ascending order, with every chunk of [from,
// to] clipped to it ([a, b]) and its number of distinct marks, until visit
// says stop.
//
// Windows are aligned to their size, which starts at one chunk and grows
// tenfold up to scanWindow: a hole near `from` costs one small query, a
// long complete run a few large ones. Chunks recorded complete in
// indexed_chunks are skipped unread (one query reads the records of the
// whole range: a thousand rows per ten million heights), so a window whose
// chunks are all recorded costs no query; the others are counted in one
// query over their span, and a chunk counted complete is recorded.
func (c *db) scanChunks(ctx context.Context, chainID string, from, to uint64, visit func(a, b, have uint64) (stop bool, err error)) error {
	if from > to {
		return nil
	}
	chunk := c.scanChunk
	size := min(chunk, c.scanWindow)
	full, err := c.fullChunks(ctx, chainID, from, to)
	if err != nil {
		return err
	}
	for lo := from; ; {
		hi := min(to, satAdd(lo-lo%size, size-1))
		if size < c.scanWindow {
			size = min(satMul(size, 10), c.scanWindow)
		}
		counts := map[uint64]uint64{}
		if runs := unknownRuns(lo, hi, chunk, full); len(runs) > 0 {
			if counts, err = c.chunkCounts(ctx, chainID, runs); err != nil {
				return err
			}
		}
		var newlyFull []uint64
		stop := false
		// k stops by equality, not k <= hi/chunk, which would wrap
		// forever at the top of the uint64 range.
		for k, last := lo/chunk, hi/chunk; ; k++ {
			a := max(lo, k*chunk)
			b := min(hi, satAdd(k*chunk, chunk-1))
			have := counts[k]
			switch {
			case full[k]:
				have = b - a + 1
			case have == chunk && a == k*chunk && b-a+1 == chunk:
				newlyFull = append(newlyFull, k)
			}
			if stop, err = visit(a, b, have); err != nil {
				return err
			}
			if stop || k == last {
				break
			}
		}
		if err := c.recordFullChunks(ctx, chainID, newlyFull); err != nil {
			return err
		}
		for _, k := range newlyFull {
			full[k] = true
		}
		if stop || hi == to {
			return nil
		}
		lo = hi + 1
	}
}

// unknownRuns lists, ascending and clipped to [lo, hi], the runs of
// consecutive chunks of [lo, hi] that are not recorded complete: what a
// window must count. A window holds at most scanWindow/scanChunk chunks.
func unknownRuns(lo, hi, chunk uint64, full map[uint64]bool) []chaindata.HeightRange {
	if len(full) == 0 {
		return []chaindata.HeightRange{{From: lo, To: hi}}
	}
	var runs []chaindata.HeightRange
	for k, last := lo/chunk, hi/chunk; ; k++ {
		if !full[k] {
			a, b := max(lo, k*chunk), min(hi, satAdd(k*chunk, chunk-1))
			if n := len(runs); n > 0 && runs[n-1].To+1 == a {
				runs[n-1].To = b
			} else {
				runs = append(runs, chaindata.HeightRange{From: a, To: b})
			}
		}
		if k == last {
			return runs
		}
	}
}

// fullChunks returns the chunks (by number k: heights [k*chunk,
// k*chunk+chunk-1]) overlapping [lo, hi] that indexed_chunks records
// complete.
func (c *db) fullChunks(ctx context.Context, chainID string, lo, hi uint64) (map[uint64]bool, error) {
	ctx, cancel := c.queryContext(ctx)
	defer cancel()
	// The chunk holding lo starts at or below it.
	query, args := fullChunksQuery{chainID, lo - lo%c.scanChunk, hi, c.scanChunk}.toSQL()
	rows, err := c.conn.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("reading %s in [%d, %d]: %w", tableIndexedChunks, lo, hi, err)
	}
	defer rows.Close()
	out := map[uint64]bool{}
	for rows.Next() {
		var first uint64
		if err := rows.Scan(&first); err != nil {
			return nil, fmt.Errorf("reading %s in [%d, %d]: %w", tableIndexedChunks, lo, hi, err)
		}
		if first%c.scanChunk == 0 {
			out[first/c.scanChunk] = true
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading %s in [%d, %d]: %w", tableIndexedChunks, lo, hi, err)
	}
	return out, nil
}

// recordFullChunks records chunks just counted complete, so later scans
// skip them. Marks are never deleted, so a complete chunk stays complete.
func (c *db) recordFullChunks(ctx context.Context, chainID string, ks []uint64) error {
	if len(ks) == 0 {
		return nil
	}
	now := time.Now().UTC().Truncate(time.Second)
	rows := make([][]any, len(ks))
	for i, k := range ks {
		rows[i] = []any{chainID, k * c.scanChunk, k*c.scanChunk + c.scanChunk - 1, now}
	}
	if err := c.insert(ctx, insertStmt{tableIndexedChunks, indexedChunkColumns}, rows); err != nil {
		return fmt.Errorf("writing %s for chunks %d-%d: %w", tableIndexedChunks, ks[0]*c.scanChunk, ks[len(ks)-1]*c.scanChunk+c.scanChunk-1, err)
	}
	return nil
}

func (c *db) chunkCounts(ctx context.Context, chainID string, runs []chaindata.HeightRange) (map[uint64]uint64, error) {
	ctx, cancel := c.queryContext(ctx)
	defer cancel()
	span := chaindata.Span(runs)
	fail := func(err error) (map[uint64]uint64, error) {
		return nil, fmt.Errorf("counting %s in %d runs within [%d, %d]: %w", tableIndexedHeights, len(runs), span.From, span.To, err)
	}
	query, args := chunkCountsQuery{chainID: chainID, runs: runs, chunk: c.scanChunk}.toSQL()
	rows, err := c.conn.Query(ctx, query, args...)
	if err != nil {
		return fail(err)
	}
	defer rows.Close()
	counts := map[uint64]uint64{}
	for rows.Next() {
		var k, n uint64
		if err := rows.Scan(&k, &n); err != nil {
			return fail(err)
		}
		counts[k] = n
	}
	if err := rows.Err(); err != nil {
		return fail(err)
	}
	return counts, nil
}

// walkHoles appends to out the heights of [from, to] that are not indexed,
// stopping at limit.
func (c *db) walkHoles(ctx context.Context, chainID string, from, to uint64, limit int, out []uint64) ([]uint64, error) {
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
