package activity

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/storage"
)

// Watermark returns the chain's contiguous progress: the highest H such
// that every height from the floor to H is indexed. The floor is the
// start height or, once retention pruned heights, the height just above
// the pruned one: heights at or below it are gone on purpose, so they are
// neither part of the progress nor a gap (the scans start there too, see
// Floor). It resumes from the persisted value (a height known to be
// covered) and persists the new one when it advanced, so the scan cost
// follows the progress since the last look, not the chain's length, and a
// restart picks up where it was.
func (a *Activities) Watermark(ctx context.Context, _ string) (types.WatermarkResult, error) {
	chainID := a.Chain.ID
	floor, err := a.Floor(ctx)
	if err != nil {
		return types.WatermarkResult{}, err
	}
	saved, haveSaved, err := a.Store.LoadState(ctx, chainID, storage.StateWatermark)
	if err != nil {
		return types.WatermarkResult{}, fmt.Errorf("chain %s: read saved watermark: %w", chainID, err)
	}
	from := floor
	if haveSaved && saved >= from {
		from = saved
	}
	h, found, err := a.Store.Watermark(ctx, chainID, from)
	if err == nil && !found && from != floor {
		// The saved height is not indexed (the tables were emptied or
		// restored): trust the data, not the bookmark.
		a.logger().Warn("saved watermark not indexed; recomputing from the floor", zap.Uint64("saved", saved), zap.Uint64("floor", floor))
		h, found, err = a.Store.Watermark(ctx, chainID, floor)
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
	return types.WatermarkResult{Height: h, Found: found, Floor: floor}, nil
}

// Floor is the lowest height the chain's scans index: the start height,
// or the height above the pruned one (chain_state pruned_height, saved by
// retention before it deletes anything) when that is higher. The traces
// backfill starts its passes there too.
func (a *Activities) Floor(ctx context.Context) (uint64, error) {
	pruned, ok, err := a.Store.LoadState(ctx, a.Chain.ID, storage.StatePrunedHeight)
	if err != nil {
		return 0, fmt.Errorf("chain %s: read pruned height: %w", a.Chain.ID, err)
	}
	return storage.Floor(a.Chain.StartHeight, pruned, ok), nil
}
