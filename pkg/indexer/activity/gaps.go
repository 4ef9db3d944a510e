package activity

import (
	"context"
	"fmt"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
)

// The scans' and the scheduler's questions about which heights are not
// indexed yet (the marks in indexed_heights).

// MissingHeights lists unindexed heights in a range, ascending.
func (a *Activities) MissingHeights(ctx context.Context, in types.MissingInput) ([]uint64, error) {
	hs, err := a.Store.MissingHeights(ctx, a.Chain.ID, in.Range.From, in.Range.To, in.Limit)
	if err != nil {
		return nil, fmt.Errorf("chain %s: missing heights in [%d, %d]: %w", a.Chain.ID, in.Range.From, in.Range.To, err)
	}
	return hs, nil
}

// CountIndexed returns, per range, how many heights are indexed.
func (a *Activities) CountIndexed(ctx context.Context, in types.CountIndexedInput) ([]uint64, error) {
	n, err := a.Store.CountIndexed(ctx, a.Chain.ID, in.Ranges)
	if err != nil {
		return nil, fmt.Errorf("chain %s: count indexed: %w", a.Chain.ID, err)
	}
	return n, nil
}

// MissingRanges lists the holes of a range as ascending ranges.
func (a *Activities) MissingRanges(ctx context.Context, in types.MissingInput) ([]chaindata.HeightRange, error) {
	rs, err := a.Store.MissingRanges(ctx, a.Chain.ID, in.Range.From, in.Range.To, in.Limit)
	if err != nil {
		return nil, fmt.Errorf("chain %s: missing ranges in [%d, %d]: %w", a.Chain.ID, in.Range.From, in.Range.To, err)
	}
	return rs, nil
}
