package workflow

import (
	"go.temporal.io/sdk/workflow"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
)

// The steps HeadScan and GapScan share: both open by reading the head and
// the watermark (openScan), both ask whether a scheduler owns heights
// (checkScheduler), and both start IndexBlockWorkflows in batches of one
// local activity each (startInBatches, startByAge). The order of these
// commands in each scan is part of its recorded history: change it only
// under workflow.GetVersion.

// scanStart is what a scan reads first.
type scanStart struct {
	head      uint64
	watermark types.WatermarkResult
	// next is the lowest height not known to be indexed: just above the
	// watermark, or the floor (the start height, or above the pruned
	// height) when it has none.
	next uint64
}

// openScan reads the head (HeadHeight), then the watermark (Watermark),
// both local activities. head is set even when the watermark fails.
func openScan(lctx workflow.Context, c ChainSetup, chainID string) (scanStart, error) {
	var s scanStart
	if err := workflow.ExecuteLocalActivity(lctx, a.HeadHeight, chainID).Get(lctx, &s.head); err != nil {
		return s, err
	}
	if err := workflow.ExecuteLocalActivity(lctx, a.Watermark, chainID).Get(lctx, &s.watermark); err != nil {
		return s, err
	}
	// Heights below the floor (retention pruned them) are gone on
	// purpose: never a gap, never indexed again.
	s.next = max(c.Settings.StartHeight, s.watermark.Floor)
	if s.watermark.Found {
		s.next = s.watermark.Height + 1
	}
	return s, nil
}

// checkScheduler asks whether the chain's scheduler runs and which heights
// it owns (CheckScheduler, a regular activity on the admin queue: it calls
// the Temporal API).
func checkScheduler(actx workflow.Context, chainID string) (types.SchedulerStatus, error) {
	var sched types.SchedulerStatus
	err := workflow.ExecuteActivity(actx, a.CheckScheduler, chainID).Get(actx, &sched)
	return sched, err
}

// startInBatches starts IndexBlockWorkflows for heights, one local activity
// per batch: a local activity per height would cost a coroutine each. mode
// is the path asking (direct, gap, range): it labels the workflows. Each
// batch looks again at what is indexed just before starting (SkipIndexed):
// the push source indexes new heads meanwhile, and a height it finished
// since the scan listed it would otherwise run a second time, only to
// find itself indexed.
func startInBatches(lctx workflow.Context, c ChainSetup, chainID string, heights []uint64, level types.PriorityLevel, mode types.IndexMode) (int, error) {
	size := c.Settings.HeadScan.BatchSize
	started := 0
	for len(heights) > 0 {
		n := min(size, len(heights))
		var r types.StartIndexResult
		err := workflow.ExecuteLocalActivity(lctx, a.StartIndex, types.StartIndexInput{
			ChainID: chainID, Heights: heights[:n], Level: level, Mode: mode, SkipIndexed: true,
		}).Get(lctx, &r)
		if err != nil {
			return started, err
		}
		started += r.Started
		heights = heights[n:]
	}
	return started, nil
}

// startByAge starts the heights of ranges newest first, each batch at the
// priority its age gives.
func startByAge(lctx workflow.Context, c ChainSetup, chainID string, head uint64, ranges []chaindata.HeightRange, mode types.IndexMode) (int, error) {
	started := 0
	for i := len(ranges) - 1; i >= 0; i-- {
		r := ranges[i]
		for _, sp := range types.LevelSpans(head, r.From, c.Settings.BlockTime) {
			lo, hi := max(sp.Range.From, r.From), min(sp.Range.To, r.To)
			if lo > hi {
				continue
			}
			n, err := startInBatches(lctx, c, chainID, chaindata.HeightRange{From: lo, To: hi}.Descending(), sp.Level, mode)
			started += n
			if err != nil {
				return started, err
			}
		}
	}
	return started, nil
}
