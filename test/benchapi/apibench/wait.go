package apibench

import (
	"context"
	"fmt"
	"time"

	"github.com/tideline-dev/tideline/pkg/storage"
)

// waitIndexed waits until every height 0..n is indexed.
func (b *bench) waitIndexed(ctx context.Context, wdone <-chan error) error {
	start := time.Now()
	last := time.Time{}
	return b.waitFor(ctx, wdone, func(deadline time.Time) (bool, error) {
		st, err := b.store.Reader().ReadState(ctx, chainID)
		if err != nil {
			return false, err
		}
		wm, found, err := b.store.Reader().ReadWatermark(ctx, chainID, 0, st)
		if err != nil {
			return false, err
		}
		if found && wm >= b.opts.N {
			b.say("indexed: watermark %d after %.0fs", wm, time.Since(start).Seconds())
			return true, nil
		}
		if time.Since(last) > 15*time.Second {
			b.say("indexing: watermark %d (found %v) of %d", wm, found, b.opts.N)
			last = time.Now()
		}
		if time.Now().After(deadline) {
			return false, fmt.Errorf("watermark %d after %s, not %d", wm, b.opts.Timeout, b.opts.N)
		}
		return false, nil
	})
}

// waitAggregated waits until the worker's aggregator has counted every
// height 0..n, so the stats route answers from its rows.
func (b *bench) waitAggregated(ctx context.Context, wdone <-chan error) error {
	start := time.Now()
	return b.waitFor(ctx, wdone, func(deadline time.Time) (bool, error) {
		h, ok, err := b.store.LoadState(ctx, chainID, storage.StateAggregatorHeight)
		if err != nil {
			return false, err
		}
		if ok && h >= b.opts.N {
			b.say("aggregated: aggregator_height %d after %.0fs", h, time.Since(start).Seconds())
			return true, nil
		}
		if time.Now().After(deadline) {
			return false, fmt.Errorf("aggregator_height %d (saved: %v) after %s, not %d", h, ok, b.opts.Timeout, b.opts.N)
		}
		return false, nil
	})
}

// waitFor calls step every 2 s until it is done or fails, the worker
// stops or ctx ends. step gets the deadline, -timeout from now, to fail
// on.
func (b *bench) waitFor(ctx context.Context, wdone <-chan error, step func(deadline time.Time) (bool, error)) error {
	deadline := time.Now().Add(b.opts.Timeout)
	for {
		if done, err := step(deadline); done || err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-wdone:
			return fmt.Errorf("the worker stopped: %v", err)
		case <-time.After(2 * time.Second):
		}
	}
}
