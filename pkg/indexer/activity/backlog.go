package activity

import (
	"context"
	"fmt"
	"sync"

	"golang.org/x/sync/semaphore"

	"github.com/tideline-dev/tideline/pkg/indexer/types"
)

// Single heights of the backlog yield to live ones.
//
// The index queue's slots (index.worker_concurrency) run every single
// height: live ones (push, HeadScan) and the backlog's (the scheduler's
// newest single_heights, GapScan's gaps, a range's hand-offs). Temporal's
// priority orders the tasks waiting for a slot, but the heights already
// running share the CPU and the database with the live one: at the start
// of a catch-up of heavy blocks, 16 of the scheduler's single heights
// written at once made a new head's write take 4-8 s instead of under 1.
// So at most index.backlog_concurrency backlog heights fetch and write at
// once in a process; the others wait for a turn (holding their slot), and
// live heights never wait. A live height then waits for a slot at most
// until one of those few finishes.

// backlogTurns hands out the backlog's turns; the zero value is ready.
type backlogTurns struct {
	once sync.Once
	sem  *semaphore.Weighted // nil: no cap
}

// live tells whether a mode is a live path's, which never waits: push's
// new heads, HeadScan's starts, and runs recorded before modes existed.
func live(mode types.IndexMode) bool {
	return mode == types.IndexModeLive || mode == types.IndexModeDirect || mode == ""
}

// backlogTurn waits for a backlog turn when mode is not live and returns
// its release; ctx ending first is an error.
func (a *Activities) backlogTurn(ctx context.Context, mode types.IndexMode) (release func(), err error) {
	t := &a.backlog
	t.once.Do(func() {
		if n := a.Chain.BacklogConcurrency; n > 0 {
			t.sem = semaphore.NewWeighted(int64(n))
		}
	})
	if t.sem == nil || live(mode) {
		return func() {}, nil
	}
	if err := t.sem.Acquire(ctx, 1); err != nil {
		return nil, fmt.Errorf("waiting for a turn of the backlog's single heights (index.backlog_concurrency %d): %w", a.Chain.BacklogConcurrency, err)
	}
	return func() { t.sem.Release(1) }, nil
}
