package workflow

import (
	"go.temporal.io/sdk/workflow"

	"github.com/tideline-dev/tideline/pkg/chain"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// maxGapHeights bounds how many missing heights one GapScan collects; the
// rest is found by the next run.
const maxGapHeights = 1_000_000

// GapScan runs from a Temporal Schedule (every minute by default). It finds
// every missing height between the chain's start (or watermark) and the head,
// including a leading gap below the first indexed height and a trailing one,
// and hands them to the same scheduling path as HeadScan: a few are started
// directly, at the priority their age gives; many go to a SchedulerWorkflow
// as ranges. Heights that a running scheduler owns are left to it, and
// those the push source is about to deliver to push (see pushWindow).
func (w *Workflows) GapScan(ctx workflow.Context, in types.GapScanInput) (types.GapScanResult, error) {
	o, err := w.options(in.ChainID)
	if err != nil {
		return types.GapScanResult{}, err
	}
	log := workflow.GetLogger(ctx)
	lctx := workflow.WithLocalActivityOptions(ctx, o.LocalActivity())
	actx := workflow.WithActivityOptions(ctx, o.AdminActivity())
	var res types.GapScanResult
	if err := workflow.ExecuteLocalActivity(lctx, a.HeadHeight, in.ChainID).Get(lctx, &res.Head); err != nil {
		return res, err
	}
	var wm types.WatermarkResult
	if err := workflow.ExecuteLocalActivity(lctx, a.Watermark, in.ChainID).Get(lctx, &wm); err != nil {
		return res, err
	}
	next := o.Chain.StartHeight
	if wm.Found {
		next = wm.Height + 1
	}
	if next > res.Head {
		return res, nil
	}
	var gaps []chain.HeightRange
	q := types.MissingInput{ChainID: in.ChainID, Range: chain.HeightRange{From: next, To: res.Head}, Limit: maxGapHeights}
	if err := workflow.ExecuteLocalActivity(lctx, a.MissingRanges, q).Get(lctx, &gaps); err != nil {
		return res, err
	}
	var sched types.SchedulerStatus
	if err := workflow.ExecuteActivity(actx, a.CheckScheduler, in.ChainID).Get(actx, &sched); err != nil {
		return res, err
	}
	if sched.Running {
		gaps = chain.Subtract(gaps, sched.Owned)
	}
	if len(gaps) > 0 {
		// The heights just above push's last one are not gaps yet: push
		// is about to deliver them.
		w, ok, err := pushWindow(ctx, lctx, in.ChainID)
		if err != nil {
			return res, err
		}
		if ok {
			gaps = chain.Subtract(gaps, w)
		}
	}
	res.Missing = chain.TotalLen(gaps)
	if res.Missing == 0 {
		return res, nil
	}
	log.Info("gaps found", "chain_id", in.ChainID, "missing", res.Missing, "ranges", len(gaps),
		"lowest", gaps[0].From, "highest", gaps[len(gaps)-1].To)
	threshold := uint64(o.Chain.HeadScan.CatchupThreshold)
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
		gaps = chain.Newest(gaps, threshold)
		log.Info("scheduler running; starting the newest gaps directly", "chain_id", in.ChainID, "heights", threshold)
	}
	res.Started, err = startByAge(lctx, o, in.ChainID, res.Head, gaps)
	return res, err
}

// startByAge starts the heights of ranges newest first, each batch at the
// priority its age gives.
func startByAge(lctx workflow.Context, o temporal.Options, chainID string, head uint64, ranges []chain.HeightRange) (int, error) {
	started := 0
	for i := len(ranges) - 1; i >= 0; i-- {
		r := ranges[i]
		for _, sp := range types.LevelSpans(head, r.From, o.Chain.BlockTime) {
			lo, hi := max(sp.Range.From, r.From), min(sp.Range.To, r.To)
			if lo > hi {
				continue
			}
			n, err := startInBatches(lctx, o, chainID, chain.HeightRange{From: lo, To: hi}.Descending(), sp.Level)
			started += n
			if err != nil {
				return started, err
			}
		}
	}
	return started, nil
}
