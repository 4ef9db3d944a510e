package activity

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/rpc"
)

// IsIndexed is the cheap check an IndexBlockWorkflow makes first.
func (a *Activities) IsIndexed(ctx context.Context, in types.IndexBlockInput) (bool, error) {
	if _, err := a.chain(in.ChainID); err != nil {
		return false, err
	}
	ok, err := a.Store.IsIndexed(ctx, in.ChainID, in.Height)
	if err != nil {
		return false, fmt.Errorf("chain %s height %d: is indexed: %w", in.ChainID, in.Height, err)
	}
	return ok, nil
}

// IndexBlock fetches one height (header, transactions, receipts, logs) and
// writes it. Fetch and write are one activity so that the block's data
// never enters the workflow's history. An error leaves the height unmarked;
// Temporal retries the activity.
func (a *Activities) IndexBlock(ctx context.Context, in types.IndexBlockInput) (types.IndexBlockResult, error) {
	c, err := a.chain(in.ChainID)
	if err != nil {
		return types.IndexBlockResult{}, err
	}
	began := time.Now()
	log := a.logger(in.ChainID).With(zap.Uint64("height", in.Height))
	data, err := rpc.FetchBlock(ctx, c.RPC, in.Height)
	if err != nil {
		a.Metrics.IndexErrors.WithLabelValues(in.ChainID, "fetch").Inc()
		log.Warn("fetch block failed; will retry", zap.Error(err))
		return types.IndexBlockResult{}, fetchFailure(fmt.Sprintf("chain %s height %d: fetch: %v", in.ChainID, in.Height, err), err)
	}
	if err := a.Store.WriteBlock(ctx, in.ChainID, data); err != nil {
		a.Metrics.IndexErrors.WithLabelValues(in.ChainID, "write").Inc()
		log.Warn("write block failed; will retry", zap.Error(err))
		return types.IndexBlockResult{}, writeFailure(fmt.Sprintf("chain %s height %d: write: %v", in.ChainID, in.Height, err), err)
	}
	a.Metrics.BlocksIndexed.WithLabelValues(in.ChainID).Inc()
	a.Metrics.TxsIndexed.WithLabelValues(in.ChainID).Add(float64(len(data.Transactions)))
	a.Metrics.LogsIndexed.WithLabelValues(in.ChainID).Add(float64(len(data.Logs)))
	a.Metrics.IndexDuration.WithLabelValues(in.ChainID).Observe(time.Since(began).Seconds())
	return types.IndexBlockResult{
		Hash:     data.Block.Hash,
		TxCount:  uint32(len(data.Transactions)),
		LogCount: uint32(len(data.Logs)),
	}, nil
}
