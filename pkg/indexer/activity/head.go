package activity

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/rpc"
)

// HeadHeight reads the chain head from the node, for the scans.
//
// A head is what every scan turns into work (direct IndexBlock workflows,
// a scheduler's range), so one wrong answer must not commit the indexer to
// heights that do not exist: a load-balanced provider may answer once from
// a node of another network or a broken replica, and a scheduler given a
// range 10,000,000 heights too high holds the live heights hostage. So a
// head above the cached one (headCache) is confirmed first: the node must
// return the block at that height (one block fetch per new head, which the
// indexer fetches anyway; up to confirmTries when a replica lacks it). A
// head it has no block for is logged, counted
// (indexer_unconfirmed_heads_total) and not used: the scan goes on with the
// cached head (or fails and runs again, if this process has none yet). A
// head at or below the cached one is used as reported. The chain ID
// argument only names the chain in the scan's history.
func (a *Activities) HeadHeight(ctx context.Context, _ string) (uint64, error) {
	head, err := a.head(ctx)
	if err != nil {
		return 0, err
	}
	a.Metrics.Head.WithLabelValues(a.Chain.ID).Set(float64(head))
	return head, nil
}

// head is the node's head, confirmed when it is above the cached one.
func (a *Activities) head(ctx context.Context) (uint64, error) {
	id := a.Chain.ID
	head, err := a.Chain.RPC.HeadHeight(ctx)
	if err != nil {
		return 0, fmt.Errorf("chain %s: read head: %w", id, err)
	}
	prev, ok := a.heads.get()
	if ok && head <= prev {
		return head, nil
	}
	err = confirmHead(ctx, a.Chain.RPC, head)
	switch {
	case errors.Is(err, rpc.ErrBlockNotFound):
		a.Metrics.UnconfirmedHeads.WithLabelValues(id).Inc()
		a.logger().Warn("node reported a head it has no block for; not using it",
			zap.Uint64("reported_head", head), zap.Uint64("confirmed_head", prev), zap.Bool("confirmed_known", ok))
		if !ok {
			return 0, fetchFailure(fmt.Sprintf("chain %s: head %d not confirmed (no block at that height)", id, head), err)
		}
		return prev, nil
	case err != nil:
		return 0, fetchFailure(fmt.Sprintf("chain %s: confirming head %d", id, head), err)
	}
	a.heads.raise(head)
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
	// pkg/rpc does not retry a block not found (an answer, not a failure),
	// and one lagging replica must not fail the scan for Temporal to retry.
	for range confirmTries {
		if _, err = c.BlockByHeight(ctx, head); !errors.Is(err, rpc.ErrBlockNotFound) {
			return err
		}
	}
	return err
}

// headCache is the highest height this process knows the chain has a
// block at: a head HeadHeight confirmed, or a block the reorg check was
// about to write (fetched from the node, so it exists). The scans judge a
// new head against it; the reorg check measures a height's distance from
// the head with it. It only grows: a shorter reorganisation lowers the
// real head by a few blocks at most, so a height far below a value seen
// once stays far.
type headCache struct {
	mu   sync.Mutex
	head uint64
	ok   bool
}

func (c *headCache) get() (uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.head, c.ok
}

func (c *headCache) raise(h uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ok || h > c.head {
		c.head, c.ok = h, true
	}
}
