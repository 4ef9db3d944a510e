package activity

import (
	"context"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/chainhead"
	"github.com/tideline-dev/tideline/pkg/rpc"
)

// HeadHeight reads the chain head from the node, for the scans: the head
// as pkg/chainhead confirms it (a new head is believed once the node
// returns its block). A head it has no block for is logged, counted
// (indexer_unconfirmed_heads_total) and not used: the scan goes on with the
// known head (or fails and runs again, if this process knows none yet).
// The chain ID argument only names the chain in the scan's history.
func (a *Activities) HeadHeight(ctx context.Context, _ string) (uint64, error) {
	head, err := a.head(ctx)
	if err != nil {
		return 0, err
	}
	a.Metrics.Head.WithLabelValues(a.Chain.ID).Set(float64(head))
	return head, nil
}

// head is the node's head, confirmed when it is above the known one.
func (a *Activities) head(ctx context.Context) (uint64, error) {
	id := a.Chain.ID
	r, err := a.heads.Confirm(ctx, a.Chain.RPC)
	if r.Unconfirmed != 0 {
		known, ok := a.heads.Known()
		a.Metrics.UnconfirmedHeads.WithLabelValues(id).Inc()
		a.logger().Warn("node reported a head it has no block for; not using it",
			zap.Uint64("reported_head", r.Unconfirmed), zap.Uint64("confirmed_head", known), zap.Bool("confirmed_known", ok))
	}
	var unconfirmed *chainhead.UnconfirmedError
	switch {
	case errors.As(err, &unconfirmed):
		if !errors.Is(unconfirmed.Err, rpc.ErrBlockNotFound) {
			a.refusedHead(unconfirmed)
		}
		return 0, fetchFailure(fmt.Sprintf("chain %s: %s", id, unconfirmed.What()), unconfirmed.Err)
	case err != nil:
		return 0, fmt.Errorf("chain %s: read head: %w", id, err)
	}
	return r.Head, nil
}

// refusedHead says that the node's block at its head was asked and not
// taken (a malformed answer, a failed request): the scans go on with no
// new head, so no height above the last confirmed one is started, and
// with no IndexBlock run nothing else would name the block or why. A node
// whose every block is refused (a transaction's position that does not
// fit) stalled a chain silently for minutes before this line.
func (a *Activities) refusedHead(e *chainhead.UnconfirmedError) {
	d := fetchDetail(e.Err)
	a.Metrics.IndexErrors.WithLabelValues(a.Chain.ID, stageHead).Inc()
	a.logger().Warn("the node's block at its head was refused; no height above the last confirmed head is started until a head's block is taken",
		zap.Uint64("height", e.Head), zap.String("type", d.Type), zap.String("endpoint", d.Endpoint),
		zap.String("method", d.Method), zap.String("field", d.Field), zap.String("reason", d.Reason), zap.Error(e.Err))
}
