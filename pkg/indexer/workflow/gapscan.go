package workflow

import (
	"go.temporal.io/sdk/workflow"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
)

// maxGapHeights bounds how many missing heights one GapScan collects; the
// rest is found by the next run.
const maxGapHeights = 1_000_000

// GapScan's activities, in call order (files in pkg/indexer/activity):
// HeadHeight (head.go) and Watermark (watermark.go) through openScan;
// MissingRanges (gaps.go); CheckScheduler (scheduler.go, admin queue);
// PushStatus (push.go) through pushWindow; then StartScheduler
// (scheduler.go, admin queue) or StartIndex (start.go) through startByAge.

// GapScan runs from a Temporal Schedule (every minute by default). It finds
// every missing height between the chain's start (or watermark) and the head,
// including a leading gap below the first indexed height and a trailing one,
// and hands them to the same scheduling path as HeadScan: a few are started
// directly, at the priority their age gives; many go to a SchedulerWorkflow
// as ranges. Heights that a running scheduler owns are left to it, and
// those the push source is about to deliver to push (see pushWindow).
func (w *Workflows) GapScan(ctx workflow.Context, in types.GapScanInput) (types.GapScanResult, error) {
	c := w.Chain
	log := workflow.GetLogger(ctx)
	lctx := workflow.WithLocalActivityOptions(ctx, c.Options.LocalActivity())
	actx := workflow.WithActivityOptions(ctx, c.Options.AdminActivity())
	var res types.GapScanResult
	open, err := openScan(lctx, c, in.ChainID)
	res.Head = open.head
	if err != nil {
		return res, err
	}
	next := open.next
	if next > res.Head {
		return res, nil
	}
	var gaps []chaindata.HeightRange
	q := types.MissingInput{ChainID: in.ChainID, Range: chaindata.HeightRange{From: next, To: res.Head}, Limit: maxGapHeights}
	if err := workflow.ExecuteLocalActivity(lctx, a.MissingRanges, q).Get(lctx, &gaps); err != nil {
		return res, err
	}
	sched, err := checkScheduler(actx, in.ChainID)
	if err != nil {
		return res, err
	}
	if sched.Running {
		gaps = chaindata.Subtract(gaps, sched.Owned)
	}
	if len(gaps) > 0 {
		// The heights just above push's last one are not gaps yet: push
		// is about to deliver them.
		w, ok, err := pushWindow(ctx, lctx, in.ChainID)
		if err != nil {
			return res, err
		}
		if ok {
			gaps = chaindata.Subtract(gaps, w)
		}
	}
	res.Missing = chaindata.TotalLen(gaps)
	if res.Missing == 0 {
		return res, nil
	}
	log.Info("gaps found", "chain_id", in.ChainID, "missing", res.Missing, "ranges", len(gaps),
		"lowest", gaps[0].From, "highest", gaps[len(gaps)-1].To)
	threshold := uint64(c.Settings.HeadScan.CatchupThreshold)
	if res.Missing >= threshold && !sched.Running {
		var started types.StartSchedulerResult
		err := workflow.ExecuteActivity(actx, a.StartScheduler, types.SchedulerInput{
			ChainID: in.ChainID, Head: res.Head, Remaining: gaps,
		}).Get(actx, &started)
		res.SchedulerStarted = started.Started
		return res, err
	}
	if res.Missing >= threshold {
		// A scheduler runs but does not own these: start the newest few now,
		// the next scan (or scheduler) takes the rest.
		gaps = chaindata.Newest(gaps, threshold)
		log.Info("scheduler running; starting the newest gaps directly", "chain_id", in.ChainID, "heights", threshold)
	}
	res.Started, err = startByAge(lctx, c, in.ChainID, res.Head, gaps, types.IndexModeGap)
	return res, err
}
