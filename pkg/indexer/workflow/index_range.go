package workflow

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// IndexRange's activities (files in pkg/indexer/activity): IndexRange
// (range.go, on the range queue), then, for heights it gave up on,
// StartIndex (start.go, local).

// handoffRetry is the pause before IndexRange tries again to start the
// IndexBlockWorkflows of its failed heights (the frontend was down).
const handoffRetry = 5 * time.Second

// IndexRange indexes a range of backlog heights with one activity on the
// chain's range queue (its own slots: live blocks on the index queue never
// wait behind it). The scheduler starts it at the range's bucket priority,
// with the ID <chain>:range:<from>-<to>. The activity retries without
// limit and resumes where it was; heights that keep failing come back in
// its result, and each is handed to its own IndexBlockWorkflow (the fixed
// ID <chain>:index:<h>) at the range's priority, where it is retried on
// its own, visible, and never skipped. At the end it wakes the chain's
// scheduler (RangeDoneSignal), which then looks at its in-flight window at
// once.
func (w *Workflows) IndexRange(ctx workflow.Context, in types.IndexRangeInput) (types.IndexRangeWorkflowResult, error) {
	c := w.Chain
	actx := workflow.WithActivityOptions(ctx, c.Options.RangeActivity(c.Settings.RangeTimeout, c.Settings.RangeHeartbeat))
	var res types.IndexRangeResult
	if err := workflow.ExecuteActivity(actx, a.IndexRange, in).Get(actx, &res); err != nil {
		return types.IndexRangeWorkflowResult{}, err
	}
	out := types.IndexRangeWorkflowResult{IndexRangeResult: res}
	if len(res.Failed) > 0 {
		hs := make([]uint64, len(res.Failed))
		for i, f := range res.Failed {
			hs[i] = f.Height
		}
		workflow.GetLogger(ctx).Warn("range handing heights to their own workflows",
			"chain_id", in.ChainID, "from", in.Range.From, "to", in.Range.To, "failed", res.Failed)
		n, err := handOff(ctx, workflow.WithLocalActivityOptions(ctx, c.Options.LocalActivity()), c, in, hs)
		if err != nil {
			return out, err
		}
		out.HandedOff = n
	}
	// A scheduler that has finished (or none) is fine: the signal only
	// saves it a poll.
	sig := workflow.SignalExternalWorkflow(ctx, temporal.SchedulerID(in.ChainID), "", temporal.RangeDoneSignal, in.Range)
	if err := sig.Get(ctx, nil); err != nil {
		workflow.GetLogger(ctx).Debug("no scheduler to wake", "chain_id", in.ChainID, "error", err)
	}
	return out, nil
}

// handOff starts the IndexBlockWorkflows of the failed heights, until it
// succeeds: the range must not end with a height neither indexed nor owned
// by a workflow.
func handOff(ctx, lctx workflow.Context, c ChainSetup, in types.IndexRangeInput, heights []uint64) (int, error) {
	// Rounds of the local activity's bounded policy (retry.local, shared
	// with the scans, which may give up): this one may not. Workflow code,
	// replay-tested: left as it is.
	for {
		n, err := startInBatches(lctx, c, in.ChainID, heights, in.Level, types.IndexModeRange)
		if err == nil || ctx.Err() != nil {
			return n, err
		}
		workflow.GetLogger(ctx).Warn("range hand-off failed; retrying", "chain_id", in.ChainID, "error", err)
		if err := workflow.Sleep(ctx, handoffRetry); err != nil {
			return n, err
		}
	}
}
