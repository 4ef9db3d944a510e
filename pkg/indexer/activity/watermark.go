package activity

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/storage"
)

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
