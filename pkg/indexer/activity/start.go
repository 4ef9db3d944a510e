package activity

import (
	"context"
	"fmt"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// startConcurrency bounds parallel StartWorkflow calls within one batch: a
// few in flight hide the round trip without flooding the frontend.
const startConcurrency = 8

// StartIndex starts one IndexBlockWorkflow per height at the given level.
// Starting a height whose workflow already runs returns the running one, so
// a retried batch starts nothing twice.
func (a *Activities) StartIndex(ctx context.Context, in types.StartIndexInput) (types.StartIndexResult, error) {
	c, err := a.chain(in.ChainID)
	if err != nil {
		return types.StartIndexResult{}, err
	}
	began := time.Now()
	heights := in.Heights
	if in.SkipIndexed && len(heights) > 0 {
		if heights, err = a.unindexed(ctx, in.ChainID, heights); err != nil {
			return types.StartIndexResult{}, err
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(startConcurrency)
	for _, h := range heights {
		g.Go(func() error {
			_, err := a.Temporal.ExecuteWorkflow(gctx, c.Options.IndexBlockStart(h, in.Level.PriorityKey()),
				temporal.IndexBlockWorkflow, types.IndexBlockInput{ChainID: in.ChainID, Height: h})
			if err != nil {
				return fmt.Errorf("chain %s: start indexing of height %d: %w", in.ChainID, h, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return types.StartIndexResult{}, err
	}
	a.Metrics.SchedulerScheduled.WithLabelValues(in.ChainID, in.Level.String()).Add(float64(len(heights)))
	a.Metrics.SchedulerBatchDuration.WithLabelValues(in.ChainID).Observe(time.Since(began).Seconds())
	return types.StartIndexResult{Started: len(heights), Skipped: len(in.Heights) - len(heights)}, nil
}

// unindexed keeps the heights that are not indexed yet.
func (a *Activities) unindexed(ctx context.Context, chainID string, heights []uint64) ([]uint64, error) {
	lo, hi := slices.Min(heights), slices.Max(heights)
	missing, err := a.Store.MissingHeights(ctx, chainID, lo, hi, int(hi-lo+1))
	if err != nil {
		return nil, fmt.Errorf("chain %s: missing heights in [%d, %d]: %w", chainID, lo, hi, err)
	}
	want := make(map[uint64]bool, len(missing))
	for _, h := range missing {
		want[h] = true
	}
	out := heights[:0:0]
	for _, h := range heights {
		if want[h] {
			out = append(out, h)
		}
	}
	return out, nil
}

// StartRange starts the IndexRange workflow of one range on the range
// queue at the level's priority. A retried start finds the running one (the
// ID is fixed per range), so nothing starts twice.
func (a *Activities) StartRange(ctx context.Context, in types.StartRangeInput) error {
	c, err := a.chain(in.ChainID)
	if err != nil {
		return err
	}
	began := time.Now()
	_, err = a.Temporal.ExecuteWorkflow(ctx, c.Options.IndexRangeStart(in.Range.From, in.Range.To, in.Level.PriorityKey()),
		temporal.IndexRangeWorkflow, types.IndexRangeInput{ChainID: in.ChainID, Range: in.Range, Level: in.Level})
	if err != nil {
		return fmt.Errorf("chain %s: start indexing of range [%d, %d]: %w", in.ChainID, in.Range.From, in.Range.To, err)
	}
	a.Metrics.SchedulerScheduled.WithLabelValues(in.ChainID, in.Level.String()).Add(float64(in.Range.Len()))
	a.Metrics.SchedulerBatchDuration.WithLabelValues(in.ChainID).Observe(time.Since(began).Seconds())
	return nil
}
