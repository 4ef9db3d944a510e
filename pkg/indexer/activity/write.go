package activity

import (
	"context"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/rpc"
)

// writeChecked writes a fetched block; near the head it first checks the
// stored blocks around it and repairs a reorganisation (see above). The
// result is non-nil when a reorganisation was repaired.
func (a *Activities) writeChecked(ctx context.Context, data *chaindata.BlockData, log *zap.Logger) (*types.ReorgResult, error) {
	c, chainID := a.Chain, a.Chain.ID
	depth := uint64(max(c.ConfirmationDepth, 0))
	n := data.Block.Number
	if depth == 0 || !a.nearHead(ctx, n, depth) {
		return nil, writeErr(a.Store.WriteBlocks(ctx, chainID, []*chaindata.BlockData{data}))
	}
	lo, hi := c.StartHeight, n+depth
	if n >= lo+depth {
		lo = n - depth
	}
	if hi < n {
		hi = ^uint64(0)
	}
	view, err := a.storedView(ctx, lo, hi)
	if err != nil {
		return nil, err
	}
	if _, suspect := firstSuspect(view, &data.Block); !suspect {
		_, anchored, err := a.anchored(ctx, view, n)
		if err != nil {
			return nil, err
		}
		if anchored {
			return nil, writeErr(a.Store.WriteBlocks(ctx, chainID, []*chaindata.BlockData{data}))
		}
	}

	release, err := a.repairTurn(ctx)
	if err != nil {
		return nil, writeErr(err)
	}
	defer release()
	// Another repair may have fixed it while this one waited.
	if view, err = a.storedView(ctx, lo, hi); err != nil {
		return nil, err
	}
	from, suspect := firstSuspect(view, &data.Block)
	if !suspect {
		below, anchored, err := a.anchored(ctx, view, n)
		if err != nil {
			return nil, err
		}
		if anchored {
			return nil, writeErr(a.Store.WriteBlocks(ctx, chainID, []*chaindata.BlockData{data}))
		}
		// The stored block below the gap is not the node's: compare from
		// there (a reorganisation below it, or a node of another history).
		from = below
	}
	// Another chain behind an endpoint's URL looks exactly like a
	// reorganisation: make sure of the chain before anything is rewritten
	// (the activity fails and is retried otherwise; nothing is written).
	if err := rpc.VerifyChain(ctx, c.RPC); err != nil {
		return nil, fetchFailure(fmt.Sprintf("chain %s height %d: checking the endpoints' chain before repairing a reorganisation", chainID, n), err)
	}
	res, err := a.repair(ctx, data, view, from, lo)
	var deep *DeepReorgError
	if errors.As(err, &deep) {
		a.holdWrites(deep)
		return nil, writeErr(err)
	}
	if err != nil {
		return nil, err
	}
	if res == nil {
		return nil, nil
	}
	a.Metrics.Reorgs.WithLabelValues(chainID).Inc()
	a.Metrics.ReorgDepth.WithLabelValues(chainID).Observe(float64(res.Depth))
	fields := []zap.Field{
		zap.Uint64("fork_point", res.ForkPoint), zap.Uint64("depth", res.Depth),
		zap.Uint64s("reindexed", res.Reindexed), zap.Uint64s("removed", res.Removed),
		zap.Uint64("confirmation_depth", depth),
	}
	log.Warn("chain reorganisation: orphaned blocks superseded, canonical blocks re-indexed", fields...)
	// What was derived above the fork point (the aggregates) counted
	// orphaned blocks: its job rewinds at once.
	if a.AfterRepair != nil {
		a.AfterRepair(ctx, res.ForkPoint, log)
	}
	return res, nil
}

// anchored tells whether the block being written at n hangs on to the
// stored chain. With n−1 stored, firstSuspect has checked the parent link
// already. Across a gap (n−1 not stored yet: heights finish out of order)
// no link is in reach, so the highest stored block below n is compared
// with the node: a node serving another history (the same chain id, other
// blocks: a wrongly restored or resynced replica) differs there, and the
// write must go through the repair, which holds the chain when the
// difference reaches the bottom of the window. Without this, every height
// written across a gap stored the other history's block before the one
// height next to the stored chain noticed. When not anchored, below is the
// stored height that differs. Called only on a view without suspects, so
// every stored block in it is canonical.
func (a *Activities) anchored(ctx context.Context, view []chaindata.StoredBlock, n uint64) (below uint64, ok bool, err error) {
	var s *chaindata.StoredBlock
	for i := len(view) - 1; i >= 0; i-- {
		if view[i].Number < n {
			s = &view[i]
			break
		}
	}
	if s == nil || s.Number == n-1 {
		return 0, true, nil
	}
	d, err := a.Chain.RPC.BlockByHeight(ctx, s.Number)
	if errors.Is(err, rpc.ErrBlockNotFound) {
		return s.Number, false, nil
	}
	if err != nil {
		return 0, false, fetchErr(fmt.Errorf("read block %d to anchor block %d to the stored chain: %w", s.Number, n, err))
	}
	return s.Number, d.Block.Hash == s.Hash, nil
}
