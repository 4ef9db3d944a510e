package activity

import (
	"context"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
)

// heartbeatPeriod heartbeats well within the timeout (the SDK batches
// heartbeats anyway).
func heartbeatPeriod(timeout time.Duration) time.Duration {
	if timeout <= 0 {
		return 5 * time.Second
	}
	return max(timeout/4, 100*time.Millisecond)
}

// heartbeatWhile heartbeats details now and every period until stop is
// called (or ctx ends), for an activity waiting on one long call.
func heartbeatWhile(ctx context.Context, period time.Duration, details any) (stop func()) {
	beat := func() { activity.RecordHeartbeat(ctx, details) }
	beat()
	return tickUntil(ctx, period, beat)
}

// tickUntil calls beat every period, from its own goroutine, until stop is
// called or ctx ends; stop returns once the goroutine has.
func tickUntil(ctx context.Context, period time.Duration, beat func()) (stop func()) {
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
