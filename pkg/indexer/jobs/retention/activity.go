package retention

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/storage"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// Retention: a chain with retention.keep_heights or retention.keep_days
// set keeps only its newest detailed rows. Every retention.interval its
// Prune workflow runs this activity, which
//
//  1. waits while the database has unfinished mutations (the previous
//     run's deletions, or a chain's removal), so deletions never pile up;
//  2. computes the target: the lowest of
//     - the watermark − retention margin (confirmation_depth +
//       scheduler.max_in_flight: what a reorg repair, or a retried or
//       duplicate write of a height just indexed, may still write),
//     - the aggregator's height (every pruned height is counted, so the
//       statistics of pruned ranges stay answerable),
//     - the watermark − keep_heights,
//     - the newest block older than keep_days;
//  3. raises pruned_height in chain_state to the target FIRST: readers
//     (the query API answers 410 Gone at or below it) and the scans (the
//     floor: the indexer's watermark.go) stop looking there before any row goes;
//  4. deletes every row of the chain at or below pruned_height from the
//     detail and look-up tables (storage.PruneRows: partition drops where
//     a partition holds only this chain, else a DELETE mutation), also
//     when the target did not move but rows are left (a run that failed
//     half-way, a late write of a pruned height).
//
// Aggregates, chain_state and the indexed marks are kept (storage/prune.go
// says why).

// Prune applies the chain's retention once.
func (j *Job) Prune(ctx context.Context, in Input) (Result, error) {
	c, chainID := j.Settings, j.ChainID
	log := j.Log.With(zap.String("chain_id", chainID))
	var res Result
	if !c.Retention.Enabled() {
		res.Skipped = "retention is off for this chain"
		return res, nil
	}
	pruned, has, err := j.Store.LoadState(ctx, chainID, storage.StatePrunedHeight)
	if err != nil {
		return res, fmt.Errorf("chain %s: read %s: %w", chainID, storage.StatePrunedHeight, err)
	}
	res.PrunedHeight, res.HasPruned = pruned, has
	pending, err := j.Store.PendingMutations(ctx)
	if err != nil {
		return res, err
	}
	if pending > 0 {
		res.Skipped = fmt.Sprintf("%d mutations of the database are still running (a previous deletion, or a chain's removal); the next run goes on", pending)
		log.Info("retention waits for running mutations", zap.Uint64("pending", pending))
		return res, nil
	}
	target, ok, why, err := j.pruneTarget(ctx)
	if err != nil {
		return res, err
	}
	res.Target = target
	if ok && (!has || target > pruned) {
		if err := j.Store.SaveState(ctx, chainID, storage.StatePrunedHeight, target); err != nil {
			return res, fmt.Errorf("chain %s: save %s %d: %w", chainID, storage.StatePrunedHeight, target, err)
		}
		pruned, has, res.Raised = target, true, true
		res.PrunedHeight, res.HasPruned = pruned, has
		log.Info("pruned height raised", zap.Uint64("pruned_height", target))
	}
	if !has {
		res.Skipped = why
		return res, nil
	}
	j.Metrics.PrunedHeight.WithLabelValues(chainID).Set(float64(pruned))
	// Finding what is left and starting the deletions reads each table's
	// range of the chain: on a long chain's first run that may take longer
	// than the heartbeat timeout, so heartbeats go on meanwhile.
	stop := temporal.HeartbeatWhile(ctx, temporal.HeartbeatPeriod(activity.GetInfo(ctx).HeartbeatTimeout), res)
	done, err := j.Store.PruneRows(ctx, chainID, pruned)
	stop()
	res.Dropped, res.Mutated, res.Reindex = done.Dropped, done.Mutated, done.Reindex
	for _, d := range done.Dropped {
		table, _, _ := strings.Cut(d, "/")
		j.Metrics.Deletions.WithLabelValues(chainID, table, "partition").Inc()
	}
	for _, table := range done.Mutated {
		j.Metrics.Deletions.WithLabelValues(chainID, table, "mutation").Inc()
	}
	if len(done.Reindex) > 0 {
		log.Error("another chain wrote into a partition while retention dropped it; its marks there were deleted so that its scans index those heights again",
			zap.Strings("chains", done.Reindex))
	}
	if err != nil {
		return res, err
	}
	if len(done.Dropped)+len(done.Mutated) == 0 && res.Skipped == "" {
		res.Skipped = "nothing left at or below the pruned height"
	}
	log.Info("retention applied", zap.Uint64("pruned_height", pruned), zap.Strings("dropped", done.Dropped), zap.Strings("mutated", done.Mutated))
	return res, nil
}

// pruneTarget is the height retention allows pruning up to now (see the
// list above); ok is false, with the reason, when nothing may be pruned.
func (j *Job) pruneTarget(ctx context.Context) (target uint64, ok bool, why string, err error) {
	c, chainID := j.Settings, j.ChainID
	wm, err := j.Progress.Watermark(ctx, chainID)
	if err != nil {
		return 0, false, "", err
	}
	if !wm.Found {
		return 0, false, "nothing is indexed contiguously yet", nil
	}
	floor := max(c.StartHeight, wm.Floor)
	if wm.Height < floor+c.Margin {
		return 0, false, fmt.Sprintf("the watermark %d is within the retention margin (%d heights) of the lowest stored height %d", wm.Height, c.Margin, floor), nil
	}
	target = wm.Height - c.Margin
	agg, found, err := j.Store.LoadState(ctx, chainID, storage.StateAggregatorHeight)
	if err != nil {
		return 0, false, "", fmt.Errorf("chain %s: read %s: %w", chainID, storage.StateAggregatorHeight, err)
	}
	if !found {
		return 0, false, "the aggregator has counted nothing yet: heights are pruned only once counted", nil
	}
	target = min(target, agg)
	if keep := c.Retention.KeepHeights; keep > 0 {
		if wm.Height < keep {
			return 0, false, fmt.Sprintf("the watermark %d is below retention.keep_heights (%d)", wm.Height, keep), nil
		}
		target = min(target, wm.Height-keep)
	}
	if days := c.Retention.KeepDays; days > 0 {
		cutoff := time.Now().Add(-time.Duration(days) * 24 * time.Hour)
		h, found, err := j.Store.HighestBlockBefore(ctx, chainID, floor, target, cutoff)
		if err != nil {
			return 0, false, "", err
		}
		if !found {
			return 0, false, fmt.Sprintf("no stored block is older than retention.keep_days (%d)", days), nil
		}
		target = min(target, h)
	}
	if target < floor {
		return 0, false, "nothing above the lowest stored height is old enough", nil
	}
	return target, true, "", nil
}
