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
// false (also for a chain this worker does not follow: pull then behaves
// as it always did). Every worker process runs a follower of the chain,
// all on the same stream, so the one in the process running the scan
// speaks for push.
func (a *Activities) PushStatus(ctx context.Context, chainID string) (types.PushStatus, error) {
	p := a.Push[chainID]
	if p == nil {
		return types.PushStatus{}, nil
	}
	c, err := a.chain(chainID)
	if err != nil {
		return types.PushStatus{}, err
	}
	latest, healthy := p.Status()
	return types.PushStatus{
		Enabled:      true,
		Healthy:      healthy,
		Latest:       latest,
		LagThreshold: c.PushLagThreshold,
	}, nil
}
