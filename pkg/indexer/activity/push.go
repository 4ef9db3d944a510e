package activity

import (
	"context"
	"hash/fnv"

	"github.com/tideline-dev/tideline/pkg/indexer/types"
)

// PushSource is what the activities read of a chain's push source (the
// newHeads follower, pkg/indexer/push) running in this process.
type PushSource interface {
	// Status returns the highest height push has delivered and whether it
	// is healthy (subscribed, and delivering within stall_after).
	Status() (latest uint64, healthy bool)
}

// PushStatus is the local activity by which HeadScan learns how far the
// push source of this process is, so that it leaves to push the heights
// push is about to deliver. A chain without a push source answers
// Enabled false (also for a chain this worker does not follow: pull then
// behaves as it always did).
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

// racing tells whether two sources may deliver the chain's heights in this
// process: only then does a delivery take the height's turn and look again
// before writing.
func (a *Activities) racing(chainID string) bool { return a.Push[chainID] != nil }

// heightSlots is the number of turns heights are spread over: two heights
// on one slot merely take turns, so a few dozen more than the writes in
// flight keep waits rare.
const heightSlots = 256

// heightTurns serialises the check-and-write of one height between the
// sources in this process (1-slot semaphores, so a wait ends with the
// context). Heights share slots by hash.
type heightTurns struct {
	slots [heightSlots]chan struct{}
}

func newHeightTurns() *heightTurns {
	t := &heightTurns{}
	for i := range t.slots {
		t.slots[i] = make(chan struct{}, 1)
	}
	return t
}

// heightTurn waits for the turn of (chainID, height); release gives it back.
func (a *Activities) heightTurn(ctx context.Context, chainID string, height uint64) (release func(), err error) {
	a.turnsOnce.Do(func() { a.turns = newHeightTurns() })
	h := fnv.New64a()
	_, _ = h.Write([]byte(chainID))
	slot := a.turns.slots[(h.Sum64()+height)%heightSlots]
	select {
	case slot <- struct{}{}:
		return func() { <-slot }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
