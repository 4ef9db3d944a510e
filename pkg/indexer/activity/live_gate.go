package activity

import (
	"context"
	"sync"
	"time"

	"github.com/tideline-dev/tideline/pkg/indexer/types"
)

// Live heights first, within a worker process: a range activity (the
// backlog) fetches and writes in chunks of index.write_batch heights,
// and before each chunk it waits while a live height's IndexBlock runs in
// this process, up to liveYield. Temporal's task queues keep a live
// height's activity from waiting for a slot; this keeps it from waiting
// for the CPU and the database behind a chunk of the backlog started just
// before it, which is what a heavy chain's live lag was made of.

// liveYield bounds one wait: a live height that takes longer (a slow
// node) does not stop the backlog.
const liveYield = 2 * time.Second

// liveGate counts the live IndexBlock activities running in the process.
type liveGate struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed while n == 0; nil before first use
}

// isLive tells the modes whose heights are the chain's newest.
func isLive(mode types.IndexMode) bool {
	return mode == types.IndexModeLive || mode == types.IndexModeDirect
}

// enter records a live height at work until the returned leave.
func (g *liveGate) enter() (leave func()) {
	g.mu.Lock()
	if g.n == 0 {
		g.idle = make(chan struct{})
	}
	g.n++
	g.mu.Unlock()
	return func() {
		g.mu.Lock()
		g.n--
		if g.n == 0 {
			close(g.idle)
		}
		g.mu.Unlock()
	}
}

// yield waits until no live height is at work, at most max, and says
// whether it waited.
func (g *liveGate) yield(ctx context.Context, max time.Duration) (bool, error) {
	g.mu.Lock()
	if g.n == 0 {
		g.mu.Unlock()
		return false, nil
	}
	idle := g.idle
	g.mu.Unlock()
	t := time.NewTimer(max)
	defer t.Stop()
	select {
	case <-idle:
	case <-t.C:
	case <-ctx.Done():
		return true, ctx.Err()
	}
	return true, nil
}
