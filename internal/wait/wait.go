// Package wait holds the one context-aware sleep of the module: retry
// loops (pkg/rpc's backoff, a range's write retries) wait with it so that
// a cancelled caller never waits out a backoff.
package wait

import (
	"context"
	"time"
)

// For waits d, or until ctx ends; then it returns ctx's error.
func For(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
