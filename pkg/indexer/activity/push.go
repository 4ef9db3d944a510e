package activity

import (
	"context"

	"github.com/tideline-dev/tideline/pkg/indexer/types"
)

// PushSource is what the activities read of a chain's push source (the
// newHeads follower, pkg/indexer/push) running in this process.
type PushSource interface {
	// Status returns the highest height push has delivered (started its
	// IndexBlockWorkflow, found it started, or failed to) and whether it
	// is healthy (subscribed, and delivering within stall_after).
	Status() (latest uint64, healthy bool)
}

// PushStatus is the local activity by which HeadScan learns how far the
// push source of this process is, so that it leaves to push the heights
// push is about to start. A chain without a push source answers Enabled
// false (pull then behaves as it always did). Every worker process runs a
// follower of the chain, all on the same stream, so the one in the
// process running the scan speaks for push.
func (a *Activities) PushStatus(_ context.Context, _ string) (types.PushStatus, error) {
	if a.Push == nil {
		return types.PushStatus{}, nil
	}
	latest, healthy := a.Push.Status()
	return types.PushStatus{
		Enabled:      true,
		Healthy:      healthy,
		Latest:       latest,
		LagThreshold: a.Chain.PushLagThreshold,
	}, nil
}
