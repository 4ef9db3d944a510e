package activity

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"go.temporal.io/api/serviceerror"
	"golang.org/x/sync/errgroup"

	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/metrics"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// startConcurrency bounds parallel StartWorkflow calls within one batch: a
// few in flight hide the round trip without flooding the frontend.
const startConcurrency = 8

// StartIndex starts one IndexBlockWorkflow per height at the given level,
// labelled with the mode of the path asking (direct when the input has
// none: calls recorded before the mode existed came from HeadScan).
// Temporal refuses the start of a height whose workflow runs (the push
// source, or an earlier scan, started it): that height counts as a
// duplicate delivery of pull and in res.Running, and a retried batch
// starts nothing twice.
func (a *Activities) StartIndex(ctx context.Context, in types.StartIndexInput) (types.StartIndexResult, error) {
	chainID := a.Chain.ID
	began := time.Now()
	mode := in.Mode
	if mode == "" {
		mode = types.IndexModeDirect
	}
	heights := in.Heights
	if in.SkipIndexed && len(heights) > 0 {
		var err error
		if heights, err = a.unindexed(ctx, heights); err != nil {
			return types.StartIndexResult{}, err
		}
	}
	var running atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(startConcurrency)
	for _, h := range heights {
		g.Go(func() error {
			started, err := a.startIndexBlock(gctx, h, in.Level, mode, false)
			if err != nil {
				return err
			}
			if !started {
				running.Add(1)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return types.StartIndexResult{}, err
	}
	res := types.StartIndexResult{Running: int(running.Load()), Skipped: len(in.Heights) - len(heights)}
	res.Started = len(heights) - res.Running
	a.Metrics.SchedulerScheduled.WithLabelValues(chainID, in.Level.String()).Add(float64(res.Started))
	a.Metrics.DuplicateDeliveries.WithLabelValues(chainID, metrics.SourcePull).Add(float64(res.Running))
	a.Metrics.SchedulerBatchDuration.WithLabelValues(chainID).Observe(time.Since(began).Seconds())
	return res, nil
}

// StartLive starts the IndexBlockWorkflow of a height the push source
// announced: at the top priority, mode live, and only as the height's
// first run (temporal.Options.IndexBlockFirstStart). A height that has or
// had a run (another worker's follower, or pull, was first; or the head
// was announced again) is not started: a duplicate delivery of push,
// counted, started false. It is a function rather than a method so that
// it is not registered as an activity: the follower calls it directly.
func StartLive(ctx context.Context, a *Activities, height uint64) (started bool, err error) {
	chainID := a.Chain.ID
	started, err = a.startIndexBlock(ctx, height, types.UltraHigh, types.IndexModeLive, true)
	if err != nil {
		return false, err
	}
	if started {
		a.Metrics.SchedulerScheduled.WithLabelValues(chainID, types.UltraHigh.String()).Inc()
	} else {
		a.Metrics.DuplicateDeliveries.WithLabelValues(chainID, metrics.SourcePush).Inc()
	}
	return started, nil
}

// startIndexBlock starts one height's IndexBlockWorkflow; started is
// false when Temporal refused it because the height's workflow runs (or,
// with first, ever ran).
func (a *Activities) startIndexBlock(ctx context.Context, h uint64, level types.PriorityLevel, mode types.IndexMode, first bool) (started bool, err error) {
	c, chainID := a.Chain, a.Chain.ID
	opts := c.Options.IndexBlockStart(h, level.PriorityKey(), string(mode))
	if first {
		opts = c.Options.IndexBlockFirstStart(h, level.PriorityKey(), string(mode))
	}
	_, err = a.Temporal.ExecuteWorkflow(ctx, opts, temporal.IndexBlockWorkflow,
		types.IndexBlockInput{ChainID: chainID, Height: h, Mode: mode})
	var already *serviceerror.WorkflowExecutionAlreadyStarted
	switch {
	case errors.As(err, &already):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("chain %s: start indexing of height %d (%s): %w", chainID, h, mode, err)
	}
	return true, nil
}

// unindexed keeps the heights that are not indexed yet.
func (a *Activities) unindexed(ctx context.Context, heights []uint64) ([]uint64, error) {
	chainID := a.Chain.ID
	lo, hi := slices.Min(heights), slices.Max(heights)
	missing, err := a.Store.MissingHeights(ctx, chainID, lo, hi, int(hi-lo+1))
	if err != nil {
		return nil, fmt.Errorf("chain %s: missing heights in [%d, %d]: %w", chainID, lo, hi, err)
	}
	want := make(map[uint64]bool, len(missing))
	for _, h := range missing {
		want[h] = true
	}
	out := heights[:0:0]
	for _, h := range heights {
		if want[h] {
			out = append(out, h)
		}
	}
	return out, nil
}

// StartRange starts the IndexRange workflow of one range on the range
// queue at the level's priority. A retried start finds the running one (the
// ID is fixed per range), so nothing starts twice.
func (a *Activities) StartRange(ctx context.Context, in types.StartRangeInput) error {
	chainID := a.Chain.ID
	began := time.Now()
	_, err := a.Temporal.ExecuteWorkflow(ctx, a.Chain.Options.IndexRangeStart(in.Range.From, in.Range.To, in.Level.PriorityKey(), string(types.IndexModeRange)),
		temporal.IndexRangeWorkflow, types.IndexRangeInput{ChainID: chainID, Range: in.Range, Level: in.Level})
	if err != nil {
		return fmt.Errorf("chain %s: start indexing of range [%d, %d]: %w", chainID, in.Range.From, in.Range.To, err)
	}
	a.Metrics.SchedulerScheduled.WithLabelValues(chainID, in.Level.String()).Add(float64(in.Range.Len()))
	a.Metrics.SchedulerBatchDuration.WithLabelValues(chainID).Observe(time.Since(began).Seconds())
	return nil
}
