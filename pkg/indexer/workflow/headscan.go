package workflow

import (
	"go.temporal.io/sdk/workflow"

	"github.com/tideline-dev/tideline/pkg/chain"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// HeadScan runs every few seconds from a Temporal Schedule (overlap: skip).
// It reads the head and the contiguous watermark and decides the mode:
//   - normal: the backlog is below the catch-up threshold, so every missing
//     height above the watermark is started directly at the top priority,
//     in batches of one local activity each;
//   - catchup: the backlog reaches the threshold, so a SchedulerWorkflow
//     takes it (started here unless one runs), and HeadScan keeps starting
//     only the heights above the scheduler's range, so live blocks never
//     wait behind the backlog.
//
// With a push source (pkg/indexer/push), the heights it is about to
// deliver are left to it; see leaveToPush. Push also wakes HeadScan early
// through the Schedule's Trigger at each new head.
func (w *Workflows) HeadScan(ctx workflow.Context, in types.HeadScanInput) (types.HeadScanResult, error) {
	o, err := w.options(in.ChainID)
	if err != nil {
		return types.HeadScanResult{}, err
	}
	lctx := workflow.WithLocalActivityOptions(ctx, o.LocalActivity())
	res, err := headScan(ctx, lctx, o, in)
	if err == nil && res.Mode != "" {
		// Metrics only: a failure to report must not fail the scan.
		_ = workflow.ExecuteLocalActivity(lctx, a.ReportScan, in.ChainID, res).Get(lctx, nil)
	}
	return res, err
}

func headScan(ctx, lctx workflow.Context, o temporal.Options, in types.HeadScanInput) (types.HeadScanResult, error) {
	log := workflow.GetLogger(ctx)
	actx := workflow.WithActivityOptions(ctx, o.AdminActivity())
	var res types.HeadScanResult
	var err error
	if err := workflow.ExecuteLocalActivity(lctx, a.HeadHeight, in.ChainID).Get(lctx, &res.Head); err != nil {
		return res, err
	}
	var wm types.WatermarkResult
	if err := workflow.ExecuteLocalActivity(lctx, a.Watermark, in.ChainID).Get(lctx, &wm); err != nil {
		return res, err
	}
	res.Watermark, res.HasWatermark = wm.Height, wm.Found
	next := o.Chain.StartHeight
	if wm.Found {
		next = wm.Height + 1
	}
	res.Mode = types.ModeNormal
	if res.Head >= next {
		res.Pending = res.Head - next + 1
	}
	threshold := uint64(o.Chain.HeadScan.CatchupThreshold)
	if res.Pending >= threshold {
		res.Mode = types.ModeCatchup
	}
	if res.Pending == 0 {
		return res, nil
	}

	// A running scheduler owns its range, whatever the backlog now is.
	var sched types.SchedulerStatus
	if err := workflow.ExecuteActivity(actx, a.CheckScheduler, in.ChainID).Get(actx, &sched); err != nil {
		return res, err
	}
	if sched.Running {
		res.Mode = types.ModeCatchup
		log.Info("scheduler running; scheduling only above its range",
			"chain_id", in.ChainID, "owned_from", sched.Owned.From, "owned_to", sched.Owned.To, "head", res.Head)
		next = max(next, sched.Owned.To+1)
	} else if res.Pending >= threshold {
		var started types.StartSchedulerResult
		err := workflow.ExecuteActivity(actx, a.StartScheduler, types.SchedulerInput{
			ChainID:   in.ChainID,
			Head:      res.Head,
			Remaining: []chain.HeightRange{{From: next, To: res.Head}},
		}).Get(actx, &started)
		if err != nil {
			return res, err
		}
		res.SchedulerStarted = started.Started
		if started.AlreadyRunning {
			log.Info("scheduler already running; skipped starting another", "chain_id", in.ChainID)
		}
		// The scheduler owns everything up to the head just read.
		return res, nil
	}
	if next > res.Head {
		return res, nil
	}
	var missing []uint64
	q := types.MissingInput{ChainID: in.ChainID, Range: chain.HeightRange{From: next, To: res.Head}, Limit: int(threshold)}
	if err := workflow.ExecuteLocalActivity(lctx, a.MissingHeights, q).Get(lctx, &missing); err != nil {
		return res, err
	}
	n := len(missing)
	if missing, err = leaveToPush(ctx, lctx, in.ChainID, missing); err != nil {
		return res, err
	}
	res.LeftToPush = n - len(missing)
	res.Started, err = startInBatches(lctx, o, in.ChainID, missing, types.UltraHigh)
	return res, err
}

// pushStatusChange versions the PushStatus local activity added to
// HeadScan's and GapScan's commands, so that runs recorded before it still
// replay.
const pushStatusChange = "push-status"

// pushWindow reads the push source's status (the PushStatus local
// activity) and returns the heights left to it. Push is preferred: pull
// fetches a height only when push lags behind it by more than the lag
// threshold. With Latest the highest height push delivered, the heights
// Latest < h <= Latest + threshold are left to push while it is healthy;
// everything else missing is pull's, including heights at or below
// Latest, which push passed without writing (a failure, a skipped head).
// Threshold 0 leaves nothing (pull-only), a huge one everything above
// Latest (push-only while healthy); an unhealthy or absent push leaves
// nothing (ok false).
func pushWindow(ctx, lctx workflow.Context, chainID string) (window chain.HeightRange, ok bool, err error) {
	if workflow.GetVersion(ctx, pushStatusChange, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return chain.HeightRange{}, false, nil
	}
	var ps types.PushStatus
	if err := workflow.ExecuteLocalActivity(lctx, a.PushStatus, chainID).Get(lctx, &ps); err != nil {
		return chain.HeightRange{}, false, err
	}
	if !ps.Enabled || !ps.Healthy || ps.LagThreshold == 0 || ps.Latest == ^uint64(0) {
		return chain.HeightRange{}, false, nil
	}
	hi := ps.Latest + ps.LagThreshold
	if hi < ps.Latest {
		hi = ^uint64(0)
	}
	return chain.HeightRange{From: ps.Latest + 1, To: hi}, true, nil
}

// leaveToPush drops from missing the heights left to push (pushWindow).
func leaveToPush(ctx, lctx workflow.Context, chainID string, missing []uint64) ([]uint64, error) {
	if len(missing) == 0 {
		return missing, nil
	}
	w, ok, err := pushWindow(ctx, lctx, chainID)
	if err != nil || !ok {
		return missing, err
	}
	out := missing[:0:0]
	for _, h := range missing {
		if !w.Contains(h) {
			out = append(out, h)
		}
	}
	if left := len(missing) - len(out); left > 0 {
		workflow.GetLogger(ctx).Debug("heights left to push", "chain_id", chainID, "left", left,
			"from", w.From, "to", w.To)
	}
	return out, nil
}

// startInBatches starts IndexBlockWorkflows for heights, one local activity
// per batch: a local activity per height would cost a coroutine each.
func startInBatches(lctx workflow.Context, o temporal.Options, chainID string, heights []uint64, level types.PriorityLevel) (int, error) {
	size := o.Chain.HeadScan.BatchSize
	started := 0
	for len(heights) > 0 {
		n := min(size, len(heights))
		var r types.StartIndexResult
		err := workflow.ExecuteLocalActivity(lctx, a.StartIndex, types.StartIndexInput{
			ChainID: chainID, Heights: heights[:n], Level: level,
		}).Get(lctx, &r)
		if err != nil {
			return started, err
		}
		started += r.Started
		heights = heights[n:]
	}
	return started, nil
}
