package storage

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/tideline-dev/tideline/pkg/chaindata"
)

// The traces backfill's reads and its write (the side job
// pkg/indexer/jobs/tracebackfill): the heights whose mark says their traces are not in,
// the stored blocks to trace (hash and transaction hashes), and
// WriteTraces, which adds a height's frames without rewriting its block.

// chain_state keys of the traces backfill: the pass under way covers
// [floor, top] newest first and next−1 is the next height it looks at (0:
// no pass under way); done is the top of the last complete pass (every
// height up to it was traced then, but the failed ones: failed−1 is the
// lowest height whose trace could not be had in the pass under way);
// enabled is 1 while the chain's workers trace (a chain whose tracing was
// off starts again from its first height).
const (
	StateTracesTop     = "traces_backfill_top"
	StateTracesFloor   = "traces_backfill_floor"
	StateTracesNext    = "traces_backfill_next"
	StateTracesDone    = "traces_backfill_done"
	StateTracesFailed  = "traces_backfill_failed"
	StateTracesEnabled = "traces_enabled"
)

// UntracedHeights lists, newest first, up to limit heights of [from, to]
// whose newest mark says their traces are not in.
func (c *Traces) UntracedHeights(ctx context.Context, chainID string, from, to uint64, limit int) ([]uint64, error) {
	var out []uint64
	err := c.query(ctx, fmt.Sprintf("reading untraced %s of chain %q in [%d, %d]", tableIndexedHeights, chainID, from, to),
		untracedHeightsQuery{chainID, from, to, limit}, func(r driver.Rows) error {
			var n uint64
			err := r.Scan(&n)
			out = append(out, n)
			return err
		})
	return out, err
}

type untracedHeightsQuery struct {
	chainID  string
	from, to uint64
	limit    int
}

func (q untracedHeightsQuery) toSQL() (string, []any) {
	return "SELECT number FROM indexed_heights WHERE chain_id = ? AND number BETWEEN ? AND ?" +
			" GROUP BY number HAVING argMax(traced, version) = 0 ORDER BY number DESC LIMIT ?",
		[]any{q.chainID, q.from, q.to, q.limit}
}

// TraceTargets returns, for each height that has a canonical block, what
// tracing it needs: the block's number and hash, and its transactions'
// index and hash, in order (BlockData with those fields only).
func (c *Traces) TraceTargets(ctx context.Context, chainID string, heights []uint64) (map[uint64]*chaindata.BlockData, error) {
	out := map[uint64]*chaindata.BlockData{}
	if len(heights) == 0 {
		return out, nil
	}
	what := fmt.Sprintf("reading the blocks to trace of chain %q at %d heights", chainID, len(heights))
	err := c.query(ctx, what, traceTargetsQuery{chainID, heights, false}, func(r driver.Rows) error {
		var d chaindata.BlockData
		if err := r.Scan(&d.Block.Number, &d.Block.Hash); err != nil {
			return err
		}
		out[d.Block.Number] = &d
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = c.query(ctx, what, traceTargetsQuery{chainID, heights, true}, func(r driver.Rows) error {
		var tx chaindata.Transaction
		if err := r.Scan(&tx.BlockNumber, &tx.Index, &tx.Hash, &tx.BlockHash); err != nil {
			return err
		}
		if d := out[tx.BlockNumber]; d != nil && d.Block.Hash == tx.BlockHash {
			d.Transactions = append(d.Transactions, tx)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for h, d := range out {
		for i := range d.Transactions {
			if d.Transactions[i].Index != uint32(i) {
				// A gap in the stored positions: not a block to trace now.
				delete(out, h)
				break
			}
		}
	}
	return out, nil
}

// traceTargetsQuery reads the canonical blocks (txs false) or
// transactions (txs true) of a few heights: narrow columns only.
type traceTargetsQuery struct {
	chainID string
	heights []uint64
	txs     bool
}

func (q traceTargetsQuery) toSQL() (string, []any) {
	args := []any{q.chainID}
	for _, h := range q.heights {
		args = append(args, h)
	}
	in := placeholders(len(q.heights))
	if q.txs {
		return newestCanonical("block_number, tx_index, hash, block_hash", "block_number, tx_index, hash, block_hash", tableTransactions,
			"chain_id = ? AND block_number IN ("+in+")", "block_number, tx_index") + " ORDER BY block_number, tx_index", args
	}
	return newestCanonical("number, hash", "number, hash", tableBlocks, "chain_id = ? AND number IN ("+in+")", "number"), args
}

// WriteTraces writes the traces of heights already indexed without them
// (the backfill): each block's frames (blocks[i].Traced, its hash and
// transactions as TraceTargets gave them), tombstones of what they
// supersede, and the height's mark again with traced = 1, in the write
// order of WriteBlocks (address_traces, traces, the marks last). A height
// whose stored block is no longer the one traced (a reorganisation
// rewrote it meanwhile) is left out and returned in skipped: its next
// write brings its traces.
func (c *Traces) WriteTraces(ctx context.Context, chainID string, blocks []*chaindata.BlockData) (skipped []uint64, err error) {
	if chainID == "" {
		return nil, errors.New("storage: WriteTraces: empty chain id")
	}
	heights := make([]uint64, 0, len(blocks))
	for _, d := range blocks {
		if !d.Traced {
			return nil, fmt.Errorf("storage: WriteTraces chain %q height %d: the block has no trace", chainID, d.Block.Number)
		}
		heights = append(heights, d.Block.Number)
	}
	if len(heights) == 0 {
		return nil, nil
	}
	slices.Sort(heights)
	if len(slices.Compact(slices.Clone(heights))) != len(heights) {
		return nil, fmt.Errorf("storage: WriteTraces chain %q: a height appears twice", chainID)
	}
	ranges := chaindata.ToRanges(heights)
	where := heightsText(heights)
	stored, err := c.storedBlocks(ctx, chainID, heights[0], heights[len(heights)-1])
	if err != nil {
		return nil, err
	}
	current := map[uint64]string{}
	for _, s := range stored {
		if s.Canonical {
			current[s.Number] = s.Hash
		}
	}
	keep := make([]*chaindata.BlockData, 0, len(blocks))
	for _, d := range blocks {
		if current[d.Block.Number] != d.Block.Hash {
			skipped = append(skipped, d.Block.Number)
			continue
		}
		keep = append(keep, d)
	}
	if len(keep) == 0 {
		return skipped, nil
	}
	version := c.clock.next()
	r := &rowSet{}
	r.marks.grow(len(keep))
	if err := c.addTraces(ctx, chainID, where, ranges, keep, r, version); err != nil {
		return nil, err
	}
	indexedAt := time.Now().Unix()
	slices.SortFunc(keep, byHeight)
	for _, d := range keep {
		r.marks.add(chainID, d.Block.Number, d.Block.Hash, indexedAt, version, true)
	}
	return skipped, c.insertRows(ctx, chainID, where, r)
}

// TraceBackfill is what chain_state says of a chain's traces backfill
// (the keys above; a key never saved reads 0).
type TraceBackfill struct {
	Enabled                        bool
	Top, Floor, Next, Done, Failed uint64
}

// Running tells whether a pass is under way.
func (b TraceBackfill) Running() bool { return b.Next > 0 }

// TraceBackfillState reads the backfill's state keys in one query.
func (c *Traces) TraceBackfillState(ctx context.Context, chainID string) (TraceBackfill, error) {
	var b TraceBackfill
	err := c.query(ctx, fmt.Sprintf("reading the traces backfill of chain %q", chainID), traceBackfillQuery{chainID},
		func(r driver.Rows) error {
			var key string
			var v uint64
			if err := r.Scan(&key, &v); err != nil {
				return err
			}
			switch key {
			case StateTracesEnabled:
				b.Enabled = v == 1
			case StateTracesTop:
				b.Top = v
			case StateTracesFloor:
				b.Floor = v
			case StateTracesNext:
				b.Next = v
			case StateTracesDone:
				b.Done = v
			case StateTracesFailed:
				b.Failed = v
			}
			return nil
		})
	return b, err
}

type traceBackfillQuery struct{ chainID string }

func (q traceBackfillQuery) toSQL() (string, []any) {
	return "SELECT key, argMax(value, version) FROM chain_state WHERE chain_id = ? AND key IN (?, ?, ?, ?, ?, ?) GROUP BY key",
		[]any{q.chainID, StateTracesEnabled, StateTracesTop, StateTracesFloor, StateTracesNext, StateTracesDone, StateTracesFailed}
}
