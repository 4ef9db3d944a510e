package storage

import (
	"context"
	"fmt"
	"time"
)

// SaveState stores a named value for the chain; the newest save wins.
func (c *Progress) SaveState(ctx context.Context, chainID, key string, value uint64) error {
	if chainID == "" || key == "" {
		return fmt.Errorf("storage: SaveState: empty chain id (%q) or key (%q)", chainID, key)
	}
	rows := [][]any{{chainID, key, value, time.Now().UTC().Truncate(time.Second), c.clock.next()}}
	if err := c.insert(ctx, insertStmt{tableChainState, chainStateColumns}, rows); err != nil {
		return fmt.Errorf("storage: writing %s for chain %q key %q: %w", tableChainState, chainID, key, err)
	}
	return nil
}

// LoadState returns the newest saved value; found is false if none was.
func (c *Progress) LoadState(ctx context.Context, chainID, key string) (uint64, bool, error) {
	var v, n uint64
	if err := c.queryRow(ctx, loadStateQuery{chainID, key}, &v, &n); err != nil {
		return 0, false, fmt.Errorf("storage: reading %s for chain %q key %q: %w", tableChainState, chainID, key, err)
	}
	return v, n > 0, nil
}

// StateWatermark is the chain_state key of the persisted contiguous
// watermark: a restart reads it back instead of scanning from the start.
const StateWatermark = "watermark"

// StateAggregatorHeight is the chain_state key of the highest height the
// aggregator has counted into `aggregates` (every height below it too).
const StateAggregatorHeight = "aggregator_height"

// StatePrunedHeight is the chain_state key of the highest height whose
// detailed rows retention has removed on purpose: nothing at or below it
// is served, and the scans do not index it again.
const StatePrunedHeight = "pruned_height"

// Floor is the lowest height whose rows a chain keeps: its start height, or
// the height above the pruned one when retention removed that far. The
// one rule for the scans, the watermark, the traces backfill and the
// query API (which answers 410 below it).
func Floor(start, pruned uint64, hasPruned bool) uint64 {
	if hasPruned && pruned >= start && pruned < ^uint64(0) {
		return pruned + 1
	}
	return start
}
