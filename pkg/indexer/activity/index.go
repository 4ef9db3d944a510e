package activity

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
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

// poisonAttempts is the attempt from which a height counts as poisoned: at
// the activity's backoff (1 s doubling to 1 min) that is about five minutes
// of failures, long past any transient outage of a node or the database.
const poisonAttempts = 10

// IndexBlock fetches one height (header, transactions, receipts, logs) and
// writes it. Fetch and write are one activity so that the block's data
// never enters the workflow's history. An error leaves the height unmarked;
// Temporal retries the activity. Within the chain's confirmation depth of
// the head the write checks the stored blocks around the height first and
// repairs a reorganisation in place (reorg.go).
func (a *Activities) IndexBlock(ctx context.Context, in types.IndexBlockInput) (types.IndexBlockResult, error) {
	c, err := a.chain(in.ChainID)
	if err != nil {
		return types.IndexBlockResult{}, err
	}
	began := time.Now()
	attempt := activity.GetInfo(ctx).Attempt
	log := a.logger(in.ChainID).With(zap.Uint64("height", in.Height), zap.Int32("attempt", attempt))
	fail := func(stage string, err error, typed func(string, error) error) error {
		a.Metrics.IndexErrors.WithLabelValues(in.ChainID, stage).Inc()
		if attempt == poisonAttempts {
			a.Metrics.PoisonedHeights.WithLabelValues(in.ChainID).Inc()
			log.Error("height keeps failing; still retrying, other heights go on", zap.String("stage", stage), zap.Error(err))
		} else {
			log.Warn(stage+" failed; will retry", zap.Error(err))
		}
		return typed(fmt.Sprintf("chain %s height %d: %s: %v", in.ChainID, in.Height, stage, err), err)
	}
	data, err := rpc.FetchBlock(ctx, c.RPC, in.Height)
	if err != nil {
		return types.IndexBlockResult{}, fail("fetch", err, fetchFailure)
	}
	reorg, err := a.writeChecked(ctx, in.ChainID, c, data, log)
	if err != nil {
		var se *stageError
		if errors.As(err, &se) && se.stage == stageFetch {
			return types.IndexBlockResult{}, fail(stageFetch, se.err, fetchFailure)
		}
		return types.IndexBlockResult{}, fail(stageWrite, err, writeFailure)
	}
	if attempt > poisonAttempts {
		// It was counted when attempt poisonAttempts failed.
		a.Metrics.PoisonedHeights.WithLabelValues(in.ChainID).Dec()
		log.Info("poisoned height indexed at last")
	}
	a.Metrics.BlocksIndexed.WithLabelValues(in.ChainID).Inc()
	a.Metrics.TxsIndexed.WithLabelValues(in.ChainID).Add(float64(len(data.Transactions)))
	a.Metrics.LogsIndexed.WithLabelValues(in.ChainID).Add(float64(len(data.Logs)))
	a.Metrics.IndexDuration.WithLabelValues(in.ChainID).Observe(time.Since(began).Seconds())
	return types.IndexBlockResult{
		Hash:     data.Block.Hash,
		TxCount:  uint32(len(data.Transactions)),
		LogCount: uint32(len(data.Logs)),
		Reorg:    reorg,
	}, nil
}
