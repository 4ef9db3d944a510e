package workflow

import (
	"go.temporal.io/sdk/workflow"

	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// HeadScan runs every few seconds from a Temporal Schedule (overlap: skip).
// It reads the head and the contiguous watermark and starts an
// IndexBlockWorkflow, at the top priority, for each missing height above
// the watermark, in batches of one local activity each.
func (w *Workflows) HeadScan(ctx workflow.Context, in types.HeadScanInput) (types.HeadScanResult, error) {
	o, err := w.options(in.ChainID)
	if err != nil {
		return types.HeadScanResult{}, err
	}
	lctx := workflow.WithLocalActivityOptions(ctx, o.LocalActivity())
	var res types.HeadScanResult
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
	if res.Head < next {
		return res, nil
	}
	res.Pending = res.Head - next + 1
	var missing []uint64
	in2 := types.MissingInput{
		ChainID: in.ChainID,
		Range:   types.HeightRange{From: next, To: res.Head},
		Limit:   o.Chain.HeadScan.CatchupThreshold,
	}
	if err := workflow.ExecuteLocalActivity(lctx, a.MissingHeights, in2).Get(lctx, &missing); err != nil {
		return res, err
	}
	started, err := startInBatches(lctx, o, in.ChainID, missing, types.UltraHigh)
	res.Started = started
	return res, err
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
