package aggregate

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/storage"
)

// The aggregator: cumulative transaction, log and byte counts per height
// (table aggregates), so that the totals of any height range are two rows
// subtracted (the seed's aggregator task).
//
// It walks heights in order from where it left off: the height saved in
// chain_state (aggregator_height) and that height's row, whose totals it
// carries on. Each chunk reads the canonical block rows (FINAL,
// is_canonical = 1) of up to aggregator.chunk heights above it, never
// above the watermark, and writes one row per height in one insert, then
// saves the new height. Behind, a chunk is aggregator.chunk heights; at
// the head it is whatever is new, often one block.
//
// Only a chain of linked blocks is counted: each block's parent hash must
// be the hash of the block counted below it. Where that fails (a height
// without a canonical block, a block whose parent is not the counted one:
// a reorganisation being repaired), it stops and the next run looks again.
//
// A reorganisation below its height shows as its last counted block no
// longer being the stored canonical block at that height. It checks this
// before every chunk and at the start of every run, so a repair by any
// process, or one whose signal was lost, is caught; it then walks down
// to the highest height whose row counted the stored block (the fork
// point), saves that height and counts again from there, overwriting the
// rows above it with a newer version. The repair in this process also
// lowers the saved height at once (Rewind), so readers of
// aggregator_height see the rewind without waiting for the next run.

// ErrTypeAggregatesPruned is the application error type of an aggregator
// that would have to count heights retention already removed: its rows
// were lost (the aggregates table truncated, say) after pruning. It is not
// retried; the runbook says what to do.
const ErrTypeAggregatesPruned = "AggregatesPruned"

// Aggregate counts the chain's heights into aggregates, from its saved
// height up to the watermark, for at most Budget (the next run of its
// Schedule goes on), heartbeating after every chunk.
func (j *Job) Aggregate(ctx context.Context, in Input) (Result, error) {
	g := &aggregator{j: j, chainID: j.ChainID, log: j.logger(), deadline: time.Now().Add(Budget)}
	if d, ok := ctx.Deadline(); ok && d.Before(g.deadline) {
		g.deadline = d
	}
	res, err := g.run(ctx)
	if err != nil {
		g.log.Warn("aggregator stopped", zap.Error(err), zap.Uint64("height", res.Height))
	}
	return res, err
}

// aggregator is one run of Aggregate.
type aggregator struct {
	j        *Job
	chainID  string
	log      *zap.Logger
	deadline time.Time

	// prev is the last counted row; has is false while nothing is.
	prev storage.AggregateRow
	has  bool
	res  Result
}

func (g *aggregator) run(ctx context.Context) (Result, error) {
	if err := g.resume(ctx); err != nil {
		return g.res, err
	}
	if g.has {
		// Exported by every run, so a restarted worker shows where the
		// aggregator is even while it cannot go on.
		g.j.Metrics.Height.WithLabelValues(g.chainID).Set(float64(g.prev.Number))
	}
	wm, err := g.j.Progress.Watermark(ctx, g.chainID)
	if err != nil {
		return g.res, err
	}
	g.res.Watermark = wm.Height
	if !wm.Found {
		return g.result(), nil
	}
	// lowest is the lowest height whose rows are stored: the floor.
	lowest := max(g.j.Settings.StartHeight, wm.Floor)
	chunk := uint64(max(g.j.Settings.Chunk, 1))
	for {
		if err := g.check(ctx, lowest); err != nil {
			return g.result(), err
		}
		next := g.j.Settings.StartHeight
		if g.has {
			next = g.prev.Number + 1
		}
		if next > wm.Height {
			return g.result(), nil
		}
		if next < lowest {
			return g.result(), sdktemporal.NewNonRetryableApplicationError(
				fmt.Sprintf("chain %s: the aggregator must count from height %d, but retention removed the rows up to %d (aggregates lost after pruning: see the runbook 'Aggregator behind')",
					g.chainID, next, lowest-1), ErrTypeAggregatesPruned, nil)
		}
		to := min(wm.Height, satAdd(next, chunk-1))
		blocks, err := g.j.Store.BlockCounts(ctx, g.chainID, next, to)
		if err != nil {
			return g.result(), err
		}
		rows, waiting := g.count(next, to, blocks)
		if len(rows) > 0 {
			if err := g.j.Store.WriteAggregates(ctx, g.chainID, rows); err != nil {
				return g.result(), err
			}
			last := rows[len(rows)-1]
			if err := g.save(ctx, last.Number); err != nil {
				return g.result(), err
			}
			g.prev, g.has = last, true
			g.res.Counted += uint64(len(rows))
			g.res.Chunks++
		}
		activity.RecordHeartbeat(ctx, g.result())
		if waiting != "" {
			g.res.Waiting = waiting
			g.log.Info("aggregator waits below the watermark", zap.String("reason", waiting), zap.Uint64("height", g.prev.Number))
			return g.result(), nil
		}
		if err := ctx.Err(); err != nil {
			return g.result(), err
		}
		if time.Now().After(g.deadline) && g.prev.Number < wm.Height {
			g.res.More = true
			return g.result(), nil
		}
	}
}

// result is the run's result with the current height.
func (g *aggregator) result() Result {
	r := g.res
	r.Height, r.HasHeight = g.prev.Number, g.has
	return r
}

// resume finds where the aggregator left off: the saved height and its
// row, or (no saved height, or no row for it) the highest row.
func (g *aggregator) resume(ctx context.Context) error {
	h, ok, err := g.j.Store.LoadState(ctx, g.chainID, storage.StateAggregatorHeight)
	if err != nil {
		return fmt.Errorf("chain %s: read %s: %w", g.chainID, storage.StateAggregatorHeight, err)
	}
	if ok {
		rows, err := g.j.Store.AggregateRows(ctx, g.chainID, h, h)
		if err != nil {
			return err
		}
		if len(rows) == 1 {
			g.prev, g.has = rows[0], true
			return nil
		}
		g.log.Warn("the saved aggregator height has no row in aggregates; resuming from the highest row", zap.Uint64("saved", h))
	}
	last, found, err := g.j.Store.LastAggregate(ctx, g.chainID)
	if err != nil {
		return err
	}
	if found && last.Number >= g.j.Settings.StartHeight {
		g.prev, g.has = last, true
	}
	return nil
}

// check makes sure the last counted block is still the stored canonical
// block at its height, and rewinds to the fork point when it is not.
func (g *aggregator) check(ctx context.Context, lowest uint64) error {
	if !g.has || g.prev.Number < lowest {
		return nil
	}
	stored, err := g.j.Store.BlockCounts(ctx, g.chainID, g.prev.Number, g.prev.Number)
	if err != nil {
		return err
	}
	if len(stored) == 1 && stored[0].Hash == g.prev.BlockHash {
		return nil
	}
	was := g.prev.Number
	if err := g.rewind(ctx, lowest); err != nil {
		return err
	}
	g.res.Rewinds++
	g.res.RewoundTo = g.prev.Number
	g.j.Metrics.Rewinds.WithLabelValues(g.chainID).Inc()
	g.log.Warn("aggregator rewound: a reorganisation replaced blocks it had counted",
		zap.Uint64("from", was), zap.Uint64("to", g.prev.Number), zap.Bool("has_height", g.has))
	return nil
}

// rewind walks down from the last counted height, in windows that grow
// fourfold, to the highest height whose row counted the stored canonical
// block (a block's hash fixes its ancestors, so every row below that one
// holds too), makes it the last counted row and saves its height.
func (g *aggregator) rewind(ctx context.Context, lowest uint64) error {
	hi, width := g.prev.Number, uint64(64)
	for {
		lo := lowest
		if hi >= lowest+width {
			lo = hi - width + 1
		}
		rows, err := g.j.Store.AggregateRows(ctx, g.chainID, lo, hi)
		if err != nil {
			return err
		}
		blocks, err := g.j.Store.BlockCounts(ctx, g.chainID, lo, hi)
		if err != nil {
			return err
		}
		stored := make(map[uint64]string, len(blocks))
		for _, b := range blocks {
			stored[b.Number] = b.Hash
		}
		for i := len(rows) - 1; i >= 0; i-- {
			if r := rows[i]; stored[r.Number] == r.BlockHash {
				g.prev = r
				return g.save(ctx, r.Number)
			}
		}
		if lo == lowest {
			break
		}
		hi, width = lo-1, satMul(width, 4)
	}
	if lowest > g.j.Settings.StartHeight {
		return sdktemporal.NewNonRetryableApplicationError(
			fmt.Sprintf("chain %s: no counted height from %d down to %d holds the stored block, and the heights below were pruned", g.chainID, g.prev.Number, lowest),
			ErrTypeAggregatesPruned, nil)
	}
	// Nothing holds down to the start height: count everything again.
	// The saved height stays until the first chunk replaces it.
	g.log.Error("aggregator found no counted height that holds the stored chain; counting from the start height again",
		zap.Uint64("from", g.prev.Number), zap.Uint64("start_height", g.j.Settings.StartHeight))
	g.prev, g.has = storage.AggregateRow{}, false
	return nil
}

// count turns the blocks read for [next, to] into rows, stopping at the
// first height without a canonical block or whose parent is not the block
// counted below it; waiting says why it stopped short of `to`, if it did.
func (g *aggregator) count(next, to uint64, blocks []storage.BlockCount) ([]storage.AggregateRow, string) {
	rows := make([]storage.AggregateRow, 0, len(blocks))
	prev, linked := g.prev, g.has
	missing := func(h uint64) string {
		return fmt.Sprintf("height %d has no canonical block row (not written yet, or removed by a reorganisation)", h)
	}
	for i, b := range blocks {
		if want := next + uint64(i); b.Number != want {
			return rows, missing(want)
		}
		if linked && b.ParentHash != prev.BlockHash {
			return rows, fmt.Sprintf("block %d %s does not link to block %d %s counted below it (a reorganisation being repaired)",
				b.Number, b.Hash, prev.Number, prev.BlockHash)
		}
		prev, linked = prev.Add(b), true
		rows = append(rows, prev)
	}
	if n := next + uint64(len(blocks)); n <= to {
		return rows, missing(n)
	}
	return rows, ""
}

// save stores the aggregator's height and exports it.
func (g *aggregator) save(ctx context.Context, h uint64) error {
	if err := g.j.Store.SaveState(ctx, g.chainID, storage.StateAggregatorHeight, h); err != nil {
		return fmt.Errorf("chain %s: save %s %d: %w", g.chainID, storage.StateAggregatorHeight, h, err)
	}
	g.j.Metrics.Height.WithLabelValues(g.chainID).Set(float64(h))
	return nil
}

// Rewind lowers the chain's saved aggregator height to fork when it is
// above it: the indexer's reorg repair, which knows the fork point, calls
// it (the worker hands it over as the repair's hook), so the rewind shows
// at once. The aggregator's own check (above) would find it at its next
// chunk anyway, also when this save loses a race with a chunk being
// saved; so a failure here is only logged.
func (j *Job) Rewind(ctx context.Context, fork uint64, log *zap.Logger) {
	chainID := j.ChainID
	if fork < j.Settings.StartHeight {
		return
	}
	h, ok, err := j.Store.LoadState(ctx, chainID, storage.StateAggregatorHeight)
	if err == nil && ok && h > fork {
		err = j.Store.SaveState(ctx, chainID, storage.StateAggregatorHeight, fork)
		if err == nil {
			j.Metrics.Rewinds.WithLabelValues(chainID).Inc()
			j.Metrics.Height.WithLabelValues(chainID).Set(float64(fork))
			log.Info("aggregator rewound to the fork point of the repaired reorganisation", zap.Uint64("from", h), zap.Uint64("to", fork))
		}
	}
	if err != nil {
		log.Warn("could not rewind the aggregator to the fork point; it finds the reorganisation itself", zap.Uint64("fork_point", fork), zap.Error(err))
	}
}

// logger is the job's logger with the chain named.
func (j *Job) logger() *zap.Logger { return j.Log.With(zap.String("chain_id", j.ChainID)) }

// satAdd adds without wrapping past MaxUint64.
func satAdd(a, b uint64) uint64 {
	if s := a + b; s >= a {
		return s
	}
	return ^uint64(0)
}

// satMul multiplies without wrapping past MaxUint64.
func satMul(a, b uint64) uint64 {
	if a != 0 && b > ^uint64(0)/a {
		return ^uint64(0)
	}
	return a * b
}
