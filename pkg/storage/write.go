package storage

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync/atomic"
	"time"

	"github.com/tideline-dev/tideline/pkg/chaindata"
)

// WriteBlocks writes N >= 1 heights as one unit; it is the one write path
// (a live block, a pushed block, a reorg repair and a range of the backlog
// all call it). Per table it sends one insert, in this order:
//
//  1. the look-up tables (lookups.go): tx_by_hash, address_txs,
//     address_logs, address_traces, block_by_hash, block_by_time, each with the new rows
//     and a tombstone for every stored key the new rows lack (a reorg put
//     another transaction, log or block where the old one was). They go
//     first because their tombstones are derived from the main rows still
//     stored: were the main rows written first and the call to fail before
//     the look-ups, the retry would read the new rows as stored, see
//     nothing stale, and the old block's hashes and addresses would stay
//     findable for good. Written first, a failure leaves the main rows
//     old, and the retry makes the same tombstones again;
//  2. transactions: the new rows, plus a tombstone (is_canonical = 0) for
//     every position that is canonical in the database but absent from the
//     new block (a reorg replaced a block by one with fewer transactions);
//  3. logs, the same way, then traces (traces_rows.go: a traced block's
//     frames, and tombstones of the stored frames it supersedes);
//  4. blocks: the block row is what the indexer compares with the node near
//     the head, so until it is written a height being repaired still looks
//     orphaned and a crash part-way is repaired again, not taken as done;
//  5. indexed_heights: the marks, last, so a height is only marked once all
//     its rows are in; a mark says whether the height's traces are in.
//
// Every row of the call has one version, newer than any earlier write of
// this process, so rewriting a height replaces its rows (ReplacingMergeTree
// keeps the newest per key) and rewriting the same block changes nothing.
// A failure anywhere leaves the heights unmarked (or marked by an earlier
// write, whose rows are still whole): they are indexed again.
//
// The heights must be distinct; they need not be contiguous or sorted.
// Two concurrent calls writing one height with different blocks may each
// miss the other's positions; the newer block row wins and the check near
// the head rewrites the height. The same holds for a call that failed
// after its look-up rows when the height is next written with yet another
// block: the failed call's look-up rows point at rows that were never
// stored, so a reader checks a look-up row against the main row it points
// at (hash or address equal) before trusting it.
func (c *ClickHouse) WriteBlocks(ctx context.Context, chainID string, blocks []*chaindata.BlockData) error {
	if chainID == "" {
		return errors.New("storage: WriteBlocks: empty chain id")
	}
	if len(blocks) == 0 {
		return fmt.Errorf("storage: WriteBlocks chain %q: no blocks", chainID)
	}
	heights := make([]uint64, len(blocks))
	for i, d := range blocks {
		if d == nil {
			return fmt.Errorf("storage: WriteBlocks chain %q: block %d of %d is nil", chainID, i, len(blocks))
		}
		if err := checkBlockData(d); err != nil {
			return fmt.Errorf("storage: WriteBlocks chain %q height %d: %w", chainID, d.Block.Number, err)
		}
		heights[i] = d.Block.Number
	}
	slices.Sort(heights)
	for i := 1; i < len(heights); i++ {
		if heights[i] == heights[i-1] {
			return fmt.Errorf("storage: WriteBlocks chain %q: height %d appears twice", chainID, heights[i])
		}
	}
	ranges := chaindata.ToRanges(heights)
	where := heightsText(heights)

	stale, err := c.stalePositions(ctx, chainID, ranges)
	if err != nil {
		return fmt.Errorf("storage: reading stored positions for chain %q %s: %w", chainID, where, err)
	}
	version := c.clock.next()
	r := buildRows(chainID, blocks, stale, version, time.Now())
	if c.beforeTopics {
		r.lookups.topics = topicHeightRows{}
	}
	if r.transfers, err = c.transferRows(ctx, chainID, ranges, blocks, version); err != nil {
		return fmt.Errorf("storage: reading stored token transfers for chain %q %s: %w", chainID, where, err)
	}
	if err := c.addTraces(ctx, chainID, where, ranges, blocks, r, version); err != nil {
		return err
	}
	if err := c.insertRows(ctx, chainID, where, r); err != nil {
		return err
	}
	c.observeTransfers(chainID, r.transfers)
	return nil
}

// insertRows sends the inserts of r in their order (rowSet.inserts),
// skipping empty ones, and stops at the first failure, naming the table.
func (c *db) insertRows(ctx context.Context, chainID, where string, r *rowSet) error {
	for _, ins := range r.inserts() {
		if ins.n == 0 {
			continue
		}
		if err := c.insertColumns(ctx, ins.stmt, ins.n, ins.cols); err != nil {
			return writeErr(ins.stmt.table, chainID, where, err)
		}
	}
	return nil
}

// checkBlockData refuses data that would be stored under the wrong key or
// lose information in a column.
func checkBlockData(d *chaindata.BlockData) error {
	if d.Block.Timestamp > math.MaxUint32 {
		return fmt.Errorf("block timestamp %d does not fit a DateTime", d.Block.Timestamp)
	}
	for i := range d.Transactions {
		if n := d.Transactions[i].BlockNumber; n != d.Block.Number {
			return fmt.Errorf("transaction %d (%s) has block number %d", i, d.Transactions[i].Hash, n)
		}
	}
	for i := range d.Logs {
		l := &d.Logs[i]
		if l.BlockNumber != d.Block.Number {
			return fmt.Errorf("log %d has block number %d", l.LogIndex, l.BlockNumber)
		}
		if len(l.Topics) > 4 {
			return fmt.Errorf("log %d has %d topics; the EVM allows at most 4", l.LogIndex, len(l.Topics))
		}
	}
	return nil
}

// heightsText names the heights of a call in errors: "height 7" or
// "heights 5-1004" (the span, whether or not every height is in the call).
func heightsText(sorted []uint64) string {
	lo, hi := sorted[0], sorted[len(sorted)-1]
	if lo == hi {
		return fmt.Sprintf("height %d", lo)
	}
	return fmt.Sprintf("heights %d-%d", lo, hi)
}

func writeErr(table, chainID, where string, err error) error {
	return fmt.Errorf("storage: writing %s for chain %q %s: %w", table, chainID, where, err)
}

// versionClock hands out ReplacingMergeTree versions: wall-clock
// nanoseconds, so writes from different processes order by time, but
// never repeating or going back within a process, so two writes of one
// height from this process always order by call.
type versionClock struct {
	last atomic.Uint64
}

func (v *versionClock) next() uint64 {
	for {
		now := uint64(time.Now().UnixNano())
		last := v.last.Load()
		if now <= last {
			now = last + 1
		}
		if v.last.CompareAndSwap(last, now) {
			return now
		}
	}
}
