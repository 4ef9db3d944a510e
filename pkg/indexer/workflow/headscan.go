package workflow

import (
	"go.temporal.io/sdk/workflow"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
)

// HeadScan's activities, in call order (files in pkg/indexer/activity):
// HeadHeight (head.go) and Watermark (watermark.go) through openScan;
// CheckScheduler and StartScheduler (scheduler.go; regular activities on
// the admin queue); MissingHeights (gaps.go); PushStatus (push.go)
// through leaveToPush; StartIndex (start.go) through startInBatches;
// ReportScan (report.go). All but the two scheduler calls are local.

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
// With a push source (pkg/indexer/push), which starts each new head's
// IndexBlock itself at once, the heights it is about to start are left to
// it; see leaveToPush. HeadScan is then the safety net: what push missed
// or could not start, on its Schedule, never woken per head.
func (w *Workflows) HeadScan(ctx workflow.Context, in types.HeadScanInput) (types.HeadScanResult, error) {
	c := w.Chain
	lctx := workflow.WithLocalActivityOptions(ctx, c.Options.LocalActivity())
	res, err := headScan(ctx, lctx, c, in)
	if err == nil && res.Mode != "" {
		// Metrics only: a failure to report must not fail the scan.
		_ = workflow.ExecuteLocalActivity(lctx, a.ReportScan, in.ChainID, res).Get(lctx, nil)
	}
	return res, err
}

func headScan(ctx, lctx workflow.Context, c ChainSetup, in types.HeadScanInput) (types.HeadScanResult, error) {
	log := workflow.GetLogger(ctx)
	actx := workflow.WithActivityOptions(ctx, c.Options.AdminActivity())
	var res types.HeadScanResult
	open, err := openScan(lctx, c, in.ChainID)
	res.Head = open.head
	if err != nil {
		return res, err
	}
	res.Watermark, res.HasWatermark = open.watermark.Height, open.watermark.Found
	next := open.next
	res.Mode = types.ModeNormal
	if res.Head >= next {
		res.Pending = res.Head - next + 1
	}
	threshold := uint64(c.Settings.HeadScan.CatchupThreshold)
	if res.Pending >= threshold {
		res.Mode = types.ModeCatchup
	}
	if res.Pending == 0 {
		return res, nil
	}

	// A running scheduler owns its range, whatever the backlog now is.
	sched, err := checkScheduler(actx, in.ChainID)
	if err != nil {
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
			Remaining: []chaindata.HeightRange{{From: next, To: res.Head}},
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
	q := types.MissingInput{ChainID: in.ChainID, Range: chaindata.HeightRange{From: next, To: res.Head}, Limit: int(threshold)}
	if err := workflow.ExecuteLocalActivity(lctx, a.MissingHeights, q).Get(lctx, &missing); err != nil {
		return res, err
	}
	n := len(missing)
	if missing, err = leaveToPush(ctx, lctx, in.ChainID, missing); err != nil {
		return res, err
	}
	res.LeftToPush = n - len(missing)
	res.Started, err = startInBatches(lctx, c, in.ChainID, missing, types.UltraHigh, types.IndexModeDirect)
	return res, err
}
