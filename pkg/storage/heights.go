package storage

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

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
//
// A max() over the chain's marks reads all of them (seconds at ten
// million). Instead the partitions of indexed_heights (a million heights
// each) are tried from the highest down, and the first that holds a mark of
// the chain answers: one partition's marks are read, plus a primary-key
// lookup per higher partition that holds only other chains.
func (c *ClickHouse) LastIndexed(ctx context.Context, chainID string) (uint64, bool, error) {
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
func (c *ClickHouse) partitions(ctx context.Context, table string) ([]uint64, error) {
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
func (c *ClickHouse) Watermark(ctx context.Context, chainID string, from uint64) (uint64, bool, error) {
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
func (c *ClickHouse) countIndexed(ctx context.Context, chainID string, from, to uint64) (uint64, error) {
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
func (c *ClickHouse) scanChunks(ctx context.Context, chainID string, from, to uint64, visit func(a, b, have uint64) (stop bool, err error)) error {
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
func unknownRuns(lo, hi, chunk uint64, full map[uint64]bool) []chain.HeightRange {
	if len(full) == 0 {
		return []chain.HeightRange{{From: lo, To: hi}}
	}
	var runs []chain.HeightRange
	for k, last := lo/chunk, hi/chunk; ; k++ {
		if !full[k] {
			a, b := max(lo, k*chunk), min(hi, satAdd(k*chunk, chunk-1))
			if n := len(runs); n > 0 && runs[n-1].To+1 == a {
				runs[n-1].To = b
			} else {
				runs = append(runs, chain.HeightRange{From: a, To: b})
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
func (c *ClickHouse) fullChunks(ctx context.Context, chainID string, lo, hi uint64) (map[uint64]bool, error) {
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
func (c *ClickHouse) recordFullChunks(ctx context.Context, chainID string, ks []uint64) error {
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

func (c *ClickHouse) chunkCounts(ctx context.Context, chainID string, runs []chain.HeightRange) (map[uint64]uint64, error) {
	ctx, cancel := c.queryContext(ctx)
	defer cancel()
	span := chain.Span(runs)
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
// scheduler's in-flight window asks it about the batches it started. The
// ranges go to the server countRangesPerQuery at a time, one query each.
func (c *ClickHouse) CountIndexed(ctx context.Context, chainID string, ranges []chain.HeightRange) ([]uint64, error) {
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
		batch := make([]chain.HeightRange, hi-lo)
		for j, i := range small[lo:hi] {
			batch[j] = ranges[i]
		}
		counts := make([]uint64, len(batch))
		dest := make([]any, len(counts))
		for i := range counts {
			dest[i] = &counts[i]
		}
		if err := c.queryRow(ctx, rangeCountsQuery{chainID, batch}, dest...); err != nil {
			span := chain.Span(batch)
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
func (c *ClickHouse) MissingRanges(ctx context.Context, chainID string, from, to uint64, maxHeights int) ([]chain.HeightRange, error) {
	hs, err := c.MissingHeights(ctx, chainID, from, to, maxHeights)
	if err != nil {
		return nil, err
	}
	return chain.ToRanges(hs), nil
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
