package activity

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/metrics"
	"github.com/tideline-dev/tideline/pkg/rpc"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// IsIndexed is the cheap check an IndexBlockWorkflow makes first. A height
// found indexed is a duplicate delivery of the source that started the
// run (push for a live run, pull for any other; an earlier run, or a
// range, indexed it first): counted, and the workflow ends.
func (a *Activities) IsIndexed(ctx context.Context, in types.IndexBlockInput) (bool, error) {
	id := a.Chain.ID
	ok, err := a.Store.IsIndexed(ctx, id, in.Height)
	if err != nil {
		return false, fmt.Errorf("chain %s height %d: is indexed: %w", id, in.Height, err)
	}
	if ok {
		source := metrics.SourcePull
		if in.Mode == types.IndexModeLive {
			source = metrics.SourcePush
		}
		a.Metrics.DuplicateDeliveries.WithLabelValues(id, source).Inc()
	}
	return ok, nil
}

// IndexBlock fetches one height (header, transactions, receipts, logs) and
// writes it. Fetch and write are one activity so that the block's data
// never enters the workflow's history. An error leaves the height unmarked;
// Temporal retries the activity. Within the chain's confirmation depth of
// the head the write checks the stored blocks around the height first and
// repairs a reorganisation in place (reorg.go). This is the only place a
// single height is fetched: the push source starts this workflow instead
// of fetching, so each height is fetched once however many workers
// follow the chain.
func (a *Activities) IndexBlock(ctx context.Context, in types.IndexBlockInput) (types.IndexBlockResult, error) {
	id := a.Chain.ID
	info := activity.GetInfo(ctx)
	attempt := info.Attempt
	log := a.logger().With(zap.Uint64("height", in.Height), zap.Int32("attempt", attempt))
	// Alive while it runs: the first beat after a quarter of the heartbeat
	// timeout, so the usual attempt (milliseconds) costs Temporal no write,
	// while one that no worker runs any more is retried within the timeout.
	if info.HeartbeatTimeout > 0 {
		stop := temporal.TickUntil(ctx, temporal.HeartbeatPeriod(info.HeartbeatTimeout), func() {
			activity.RecordHeartbeat(ctx, in.Height)
		})
		defer stop()
	}
	// fail counts and logs a failed attempt and types it for Temporal,
	// with d (what failed where) as the failure's details.
	fail := func(err error, d temporal.HeightFailure) error {
		stage := d.Stage
		a.Metrics.IndexErrors.WithLabelValues(id, stage).Inc()
		if attempt >= temporal.PoisonAttempts {
			a.Metrics.PoisonedAttempts.WithLabelValues(id).Inc()
			a.markPoisoned(in.Height, attempt, d)
			log.Error("height keeps failing; still retrying at the backoff's ceiling, other heights go on, the watermark waits below it",
				zap.String("stage", stage), zap.String("type", d.Type), zap.String("endpoint", d.Endpoint),
				zap.String("method", d.Method), zap.String("field", d.Field), zap.Error(err))
		} else {
			log.Warn(stage+" failed; will retry", zap.Error(err))
		}
		return failure(fmt.Sprintf("chain %s height %d: %s: %v", id, in.Height, stage, err), d, err)
	}
	if attempt > 1 && a.writtenBefore(ctx, in.Height, attempt, log) {
		return types.IndexBlockResult{AlreadyIndexed: true}, nil
	}
	res, err := a.deliver(ctx, in.Height, in.Mode, log)
	if err != nil {
		var se *stageError
		if errors.As(err, &se) && se.stage == stageFetch {
			if head, ok := a.notProduced(ctx, in.Height, se.err); ok {
				a.Metrics.NotProduced.WithLabelValues(id).Inc()
				log.Warn("no block at this height and the node's head is below it: ending without indexing; later scans start it again",
					zap.Uint64("node_head", head))
				return types.IndexBlockResult{NotProduced: true}, nil
			}
			return types.IndexBlockResult{}, fail(se.err, fetchDetail(se.err))
		}
		return types.IndexBlockResult{}, fail(err, writeDetail(err))
	}
	if attempt > temporal.PoisonAttempts {
		a.clearPoisonedHeight(in.Height)
		log.Info("poisoned height indexed at last")
	}
	return res, nil
}

// writtenBefore tells a retried attempt whether an earlier one wrote the
// height to its mark and then lost its answer: its worker stopped, or its
// deadline passed, between the mark and the reply. The workflow's own
// check (IsIndexed) ran before the first attempt only, so without this
// the retry wrote the whole height a second time (seen when a test
// stopped its worker the moment the watermark reached the head). The
// mark is written last, so a marked height is whole. A failed check
// indexes the height anyway: the write is idempotent.
func (a *Activities) writtenBefore(ctx context.Context, height uint64, attempt int32, log *zap.Logger) bool {
	ok, err := a.Store.IsIndexed(ctx, a.Chain.ID, height)
	if err != nil || !ok {
		return false
	}
	if attempt > temporal.PoisonAttempts {
		a.clearPoisonedHeight(height)
	}
	log.Info("an earlier attempt indexed this height; not writing it again")
	return true
}

// notProduced tells whether a fetch that found no block failed because the
// height does not exist yet: it lies above the node's head, asked now,
// above the highest head this process confirmed (HeadHeight), and above
// every indexed height. Such a height was started from a head that was
// wrong (a phantom) or has been reorganised away; retrying it for ever
// would hold a slot (and a scheduler's window) for nothing, so the
// workflow ends and the height stays unindexed for the scans to find
// again. A height at or below any of those is missing on a node that
// should have it (a lagging replica behind a load balancer answers a low
// head and no block): that is retried.
func (a *Activities) notProduced(ctx context.Context, height uint64, err error) (head uint64, ok bool) {
	if !errors.Is(err, rpc.ErrBlockNotFound) {
		return 0, false
	}
	head, herr := a.Chain.RPC.HeadHeight(ctx)
	if herr != nil || height <= head {
		return head, false
	}
	if confirmed, _ := a.heads.Known(); height <= confirmed {
		return head, false
	}
	last, found, serr := a.Store.LastIndexed(ctx, a.Chain.ID)
	return head, serr == nil && (!found || height > last)
}

// deliver fetches and writes one height:
//
//  0. nothing while the chain's writes are held (halt.go); a backlog
//     height waits for its turn (backlog.go);
//  1. fetch the block;
//  2. write, with the reorg check near the head (writeChecked).
//
// Errors are *stageError (fetch) or storage errors. The height is counted
// in indexer_heights_indexed_total under the mode that started its run.
func (a *Activities) deliver(ctx context.Context, height uint64, mode types.IndexMode, log *zap.Logger) (types.IndexBlockResult, error) {
	chainID := a.Chain.ID
	began := time.Now()
	if err := a.heldWrites(ctx); err != nil {
		return types.IndexBlockResult{}, writeErr(err)
	}
	release, err := a.backlogTurn(ctx, mode)
	if err != nil {
		return types.IndexBlockResult{}, writeErr(err)
	}
	defer release()
	data, err := rpc.FetchBlock(ctx, a.Chain.RPC, height)
	if err == nil {
		err = a.requireTraces(data)
	}
	if err != nil {
		return types.IndexBlockResult{}, fetchErr(err)
	}
	reorg, err := a.writeChecked(ctx, data, log)
	if err != nil {
		return types.IndexBlockResult{}, err
	}
	a.Metrics.BlocksIndexed.WithLabelValues(chainID).Inc()
	a.Metrics.HeightsIndexed.WithLabelValues(chainID, mode.Label()).Inc()
	a.Metrics.TxsIndexed.WithLabelValues(chainID).Add(float64(len(data.Transactions)))
	a.Metrics.LogsIndexed.WithLabelValues(chainID).Add(float64(len(data.Logs)))
	a.countTraces(data)
	a.Metrics.IndexDuration.WithLabelValues(chainID).Observe(time.Since(began).Seconds())
	return types.IndexBlockResult{
		Hash:     data.Block.Hash,
		TxCount:  uint32(len(data.Transactions)),
		LogCount: uint32(len(data.Logs)),
		Reorg:    reorg,
	}, nil
}
