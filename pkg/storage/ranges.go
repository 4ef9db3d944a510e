package storage

import (
	"context"
	"fmt"

	"github.com/tideline-dev/tideline/pkg/chain"
)

// rangeCountQuery counts the distinct indexed heights of one range.
type rangeCountQuery struct {
	chainID  string
	from, to uint64
}

func (q rangeCountQuery) toSQL() (string, []any) {
	return "SELECT uniqExact(number) FROM indexed_heights WHERE chain_id = ? AND number BETWEEN ? AND ?",
		[]any{q.chainID, q.from, q.to}
}

// CountIndexed returns, per range, how many of its heights are indexed: the
// scheduler's in-flight window asks it about the batches it started.
func (c *ClickHouse) CountIndexed(ctx context.Context, chainID string, ranges []chain.HeightRange) ([]uint64, error) {
	out := make([]uint64, len(ranges))
	for i, r := range ranges {
		if r.To < r.From {
			continue
		}
		if err := c.queryRow(ctx, rangeCountQuery{chainID, r.From, r.To}, &out[i]); err != nil {
			return nil, fmt.Errorf("storage: counting %s for chain %q in [%d, %d]: %w", tableIndexedHeights, chainID, r.From, r.To, err)
		}
	}
	return out, nil
}

// MissingRanges lists the holes of [from, to] as ascending ranges, covering
// at most maxHeights heights (the lowest ones).
func (c *ClickHouse) MissingRanges(ctx context.Context, chainID string, from, to uint64, maxHeights int) ([]chain.HeightRange, error) {
	hs, err := c.MissingHeights(ctx, chainID, from, to, maxHeights)
	if err != nil {
		return nil, err
	}
	return chain.ToRanges(hs), nil
}

// StateWatermark is the chain_state key of the persisted contiguous
// watermark: a restart reads it back instead of scanning from the start.
const StateWatermark = "watermark"
