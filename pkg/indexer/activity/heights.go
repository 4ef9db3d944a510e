package activity

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/chain"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/rpc"
)

// HeadHeight reads the chain head from the node, for the scans.
//
// A head is what every scan turns into work (direct IndexBlock workflows,
// a scheduler's range), so one wrong answer must not commit the indexer to
// heights that do not exist: a load-balanced provider may answer once from
// a node of another network or a broken replica, and a scheduler given a
// range 10,000,000 heights too high holds the live heights hostage. So a
// head above the last confirmed one is confirmed first: the node must
// return the block at that height (one block fetch per new head, which the
// indexer fetches anyway; up to confirmTries when a replica lacks it). A
// head it has no block for is logged, counted
// (indexer_unconfirmed_heads_total) and not used: the scan goes on with the
// last confirmed head (or fails and runs again, if this process has none
// yet). A head at or below the confirmed one is used as reported.
func (a *Activities) HeadHeight(ctx context.Context, chainID string) (uint64, error) {
	c, err := a.chain(chainID)
	if err != nil {
		return 0, err
	}
	head, err := c.RPC.HeadHeight(ctx)
	if err != nil {
		return 0, fmt.Errorf("chain %s: read head: %w", chainID, err)
	}
	if prev, ok := a.heads.confirmed(chainID); !ok || head > prev {
		err := confirmHead(ctx, c.RPC, head)
		switch {
		case errors.Is(err, rpc.ErrBlockNotFound):
			a.Metrics.UnconfirmedHeads.WithLabelValues(chainID).Inc()
			a.logger(chainID).Warn("node reported a head it has no block for; not using it",
				zap.Uint64("reported_head", head), zap.Uint64("confirmed_head", prev), zap.Bool("confirmed_known", ok))
			if !ok {
				return 0, fetchFailure(fmt.Sprintf("chain %s: head %d not confirmed (no block at that height)", chainID, head), err)
			}
			head = prev
		case err != nil:
			return 0, fetchFailure(fmt.Sprintf("chain %s: confirming head %d", chainID, head), err)
		default:
			a.heads.confirm(chainID, head)
		}
	}
	a.Metrics.Head.WithLabelValues(chainID).Set(float64(head))
	return head, nil
}

// confirmTries is how many times a head's block is asked for before the
// head counts as unconfirmed. Behind a load balancer whose replicas are
// not all at the head, one request for the block may land on a replica
// that lacks it: with round robin over two replicas, the head and its
// block would always be answered by different ones, and a single try
// would never confirm a head while one replica lags.
const confirmTries = 3

// confirmHead asks for the block at head until a replica has it, at most
// confirmTries times; the error is the last one.
func confirmHead(ctx context.Context, c rpc.Client, head uint64) error {
	var err error
	for range confirmTries {
		if _, err = c.BlockByHeight(ctx, head); !errors.Is(err, rpc.ErrBlockNotFound) {
			return err
		}
	}
	return err
}

// headGuard holds, per chain, the highest head this process has seen a
// block for.
type headGuard struct {
	mu    sync.Mutex
	heads map[string]uint64
}

func (g *headGuard) confirmed(chainID string) (uint64, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	h, ok := g.heads[chainID]
	return h, ok
}

func (g *headGuard) confirm(chainID string, head uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.heads == nil {
		g.heads = map[string]uint64{}
	}
	if h, ok := g.heads[chainID]; !ok || head > h {
		g.heads[chainID] = head
	}
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
