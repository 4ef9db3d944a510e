package workflow

import (
	"go.temporal.io/sdk/workflow"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
)

// pushStatusChange versions the PushStatus local activity added to
// HeadScan's and GapScan's commands, so that runs recorded before it still
// replay.
const pushStatusChange = "push-status"

// pushWindow reads the push source's status (the PushStatus local
// activity) and returns the heights left to it. Push is preferred: pull
// starts a height only when push lags behind it by more than the lag
// threshold. With Latest the highest height push delivered (started its
// IndexBlockWorkflow, or tried to), the heights Latest < h <= Latest +
// threshold are left to push while it is healthy; everything else missing
// is pull's, including heights at or below Latest: in flight (pull's start
// is then refused by Temporal, a counted duplicate) or passed by push
// without a start (a failed start, a skipped head). Threshold 0 leaves
// nothing (both start every head, Temporal runs one), a huge one
// everything above Latest (push-only while healthy); an unhealthy or
// absent push leaves nothing (ok false).
func pushWindow(ctx, lctx workflow.Context, chainID string) (window chaindata.HeightRange, ok bool, err error) {
	if workflow.GetVersion(ctx, pushStatusChange, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return chaindata.HeightRange{}, false, nil
	}
	var ps types.PushStatus
	if err := workflow.ExecuteLocalActivity(lctx, a.PushStatus, chainID).Get(lctx, &ps); err != nil {
		return chaindata.HeightRange{}, false, err
	}
	if !ps.Enabled || !ps.Healthy || ps.LagThreshold == 0 || ps.Latest == ^uint64(0) {
		return chaindata.HeightRange{}, false, nil
	}
	hi := ps.Latest + ps.LagThreshold
	if hi < ps.Latest {
		hi = ^uint64(0)
	}
	return chaindata.HeightRange{From: ps.Latest + 1, To: hi}, true, nil
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
