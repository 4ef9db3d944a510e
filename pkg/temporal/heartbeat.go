package temporal

import (
	"context"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
)

// The pace of activity heartbeats, one place for the indexing path and
// every side job.

// HeartbeatPeriod heartbeats well within the timeout (the SDK batches
// heartbeats anyway).
func HeartbeatPeriod(timeout time.Duration) time.Duration {
	if timeout <= 0 {
		return 5 * time.Second
	}
	return max(timeout/4, 100*time.Millisecond)
}

// HeartbeatWhile heartbeats details now and every period until stop is
// called (or ctx ends), for an activity waiting on one long call.
func HeartbeatWhile(ctx context.Context, period time.Duration, details any) (stop func()) {
	beat := func() { activity.RecordHeartbeat(ctx, details) }
	beat()
	return TickUntil(ctx, period, beat)
}

// TickUntil calls beat every period, from its own goroutine, until stop is
// called or ctx ends; stop returns once the goroutine has.
func TickUntil(ctx context.Context, period time.Duration, beat func()) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				beat()
			case <-done:
				return
			case <-ctx.Done():
				return
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}
