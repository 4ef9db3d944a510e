package activity

import (
	"context"
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/storage"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// startConcurrency bounds parallel StartWorkflow calls within one batch: a
// few in flight hide the round trip without flooding the frontend.
const startConcurrency = 8

// HeadHeight reads the chain head from the node.
func (a *Activities) HeadHeight(ctx context.Context, chainID string) (uint64, error) {
	c, err := a.chain(chainID)
	if err != nil {
		return 0, err
	}
	head, err := c.RPC.HeadHeight(ctx)
	if err != nil {
		return 0, fmt.Errorf("chain %s: read head: %w", chainID, err)
	}
	a.Metrics.Head.WithLabelValues(chainID).Set(float64(head))
	return head, nil
}

// Watermark returns the chain's contiguous progress: the highest H such
// that every height from the start height to H is indexed. It resumes from
// the persisted value (a height known to be covered) and persists the new
// one when it advanced, so the scan cost follows the progress since the last
// look, not the chain's length, and a restart picks up where it was.
func (a *Activities) Watermark(ctx context.Context, chainID string) (types.WatermarkResult, error) {
	c, err := a.chain(chainID)
	if err != nil {
		return types.WatermarkResult{}, err
	}
	saved, haveSaved, err := a.Store.LoadState(ctx, chainID, storage.StateWatermark)
	if err != nil {
		return types.WatermarkResult{}, fmt.Errorf("chain %s: read saved watermark: %w", chainID, err)
	}
	from := c.StartHeight
	if haveSaved && saved >= from {
		from = saved
	}
	h, found, err := a.Store.Watermark(ctx, chainID, from)
	if err == nil && !found && from != c.StartHeight {
		// The saved height is not indexed (the tables were emptied or
		// restored): trust the data, not the bookmark.
		a.logger(chainID).Warn("saved watermark not indexed; recomputing from the start height", zap.Uint64("saved", saved))
		h, found, err = a.Store.Watermark(ctx, chainID, c.StartHeight)
	}
	if err != nil {
		return types.WatermarkResult{}, fmt.Errorf("chain %s: read watermark: %w", chainID, err)
	}
	if found && (!haveSaved || h != saved) {
		if err := a.Store.SaveState(ctx, chainID, storage.StateWatermark, h); err != nil {
			return types.WatermarkResult{}, fmt.Errorf("chain %s: save watermark %d: %w", chainID, h, err)
		}
	}
	if found {
		a.Metrics.Watermark.WithLabelValues(chainID).Set(float64(h))
	}
	return types.WatermarkResult{Height: h, Found: found}, nil
}

// MissingHeights lists unindexed heights in a range, ascending.
func (a *Activities) MissingHeights(ctx context.Context, in types.MissingInput) ([]uint64, error) {
	if _, err := a.chain(in.ChainID); err != nil {
		return nil, err
	}
	hs, err := a.Store.MissingHeights(ctx, in.ChainID, in.Range.From, in.Range.To, in.Limit)
	if err != nil {
		return nil, fmt.Errorf("chain %s: missing heights in [%d, %d]: %w", in.ChainID, in.Range.From, in.Range.To, err)
	}
	return hs, nil
}

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
