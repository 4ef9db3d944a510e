package activity

import (
	"context"
	"fmt"

	"github.com/tideline-dev/tideline/pkg/chain"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
)

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

// CountIndexed returns, per range, how many heights are indexed.
func (a *Activities) CountIndexed(ctx context.Context, in types.CountIndexedInput) ([]uint64, error) {
	if _, err := a.chain(in.ChainID); err != nil {
		return nil, err
	}
	n, err := a.Store.CountIndexed(ctx, in.ChainID, in.Ranges)
	if err != nil {
		return nil, fmt.Errorf("chain %s: count indexed: %w", in.ChainID, err)
	}
	return n, nil
}

// MissingRanges lists the holes of a range as ascending ranges.
func (a *Activities) MissingRanges(ctx context.Context, in types.MissingInput) ([]chain.HeightRange, error) {
	if _, err := a.chain(in.ChainID); err != nil {
		return nil, err
	}
	rs, err := a.Store.MissingRanges(ctx, in.ChainID, in.Range.From, in.Range.To, in.Limit)
	if err != nil {
		return nil, fmt.Errorf("chain %s: missing ranges in [%d, %d]: %w", in.ChainID, in.Range.From, in.Range.To, err)
	}
	return rs, nil
}
