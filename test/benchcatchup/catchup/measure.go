package catchup

import (
	"context"
	"fmt"
	"time"

	"github.com/tideline-dev/tideline/pkg/chaindata"
)

// measure follows the catch-up until the watermark reaches the head (or
// the timeout), then settles and checks the database.
func (b *bench) measure(ctx context.Context) (result, error) {
	var sched schedulerView
	lags := newLagSampler()
	watchCtx, stopWatch := context.WithCancel(ctx)
	watching := make(chan struct{})
	go func() {
		defer close(watching)
		b.watchScheduler(watchCtx, &sched)
	}()
	defer func() {
		stopWatch()
		<-watching
	}()
	samplerCtx, stopSampler := context.WithCancel(ctx)
	sampling := make(chan struct{})
	go func() {
		defer close(sampling)
		lags.run(samplerCtx, b)
	}()
	defer func() {
		stopSampler()
		<-sampling
	}()
	res, headEnd, prof, err := b.catchUp(ctx, lags, &sched)
	if err != nil {
		return result{}, err
	}
	stopSampler()
	<-sampling
	res.LagP95, res.LagMax = lags.result()
	b.say("lag: %d samples from the first indexed height on, p95 %d, max %d blocks", lags.count(), res.LagP95, res.LagMax)
	if n, p95, maxLag := lags.afterEdge(); n > 0 {
		b.say("lag from the first sample at the live edge (lag <= 1, %d samples from it on): p95 %d, max %d blocks", n, p95, maxLag)
	}
	stopWatch()
	<-watching
	return b.check(ctx, res, headEnd, &sched, prof)
}

// catchUp checks every second whether the catch-up is done, printing the
// status line every statusEvery. It returns the time taken (or the
// timeout), the watermark it ended at (the head on a timeout) and the CPU
// profile under way, if any.
func (b *bench) catchUp(ctx context.Context, lags *lagSampler, sched *schedulerView) (result, uint64, *profiler, error) {
	o := b.opts
	var (
		firstIdx   bool
		lastStatus = time.Now()
		lastCount  uint64
		prof       *profiler
		res        result
		headEnd    uint64
	)
	deadline := b.workerStart.Add(o.Timeout)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return result{}, 0, nil, ctx.Err()
		case <-tick.C:
		}
		if b.worker.Exited() {
			return result{}, 0, nil, fmt.Errorf("worker exited during the catch-up:\n%s", b.worker.Tail(4000))
		}
		head := b.sim.Head()
		top, found, err := b.store.LastIndexed(ctx, chainID)
		if err != nil {
			b.say("reading the newest indexed height: %v", err)
			continue
		}
		if found && !firstIdx {
			firstIdx = true
			b.say("first height indexed: %d (head %d)", top, head)
			if o.CPUProfile != "" {
				prof = b.startProfile(ctx)
			}
		}
		// Caught up when the watermark, as the indexer computes it, has
		// reached the live edge: at most the blocks of one head-scan
		// interval above it, which the live path is indexing (with 2 s
		// blocks, every height but the newest). Waiting for watermark =
		// head exactly would wait for a moment that a steady live lag of
		// one block makes rare. The one-query count keeps the per-second
		// check cheap until it can hold.
		caughtUp := false
		edge := head - min(head, liveEdge(o.BlockTime))
		if found && top >= edge {
			n, err := b.store.CountIndexed(ctx, chainID, []chaindata.HeightRange{{From: 0, To: edge}})
			if err == nil && n[0] == edge+1 {
				wm, ok, err := b.store.Watermark(ctx, chainID, 0)
				if caughtUp = err == nil && ok && wm >= edge; caughtUp {
					headEnd = wm
				}
			}
		}
		if caughtUp {
			res.Seconds = time.Since(b.workerStart).Seconds()
			b.say("caught up: watermark %d, head %d after %.1fs (%.1f heights/s)", headEnd, head, res.Seconds, float64(headEnd+1)/res.Seconds)
			return res, headEnd, prof, nil
		}
		if time.Now().After(deadline) {
			res.TimedOut = true
			res.Seconds = time.Since(b.workerStart).Seconds()
			b.say("TIMEOUT after %s: the watermark has not reached head %d", o.Timeout, head)
			return res, head, prof, nil
		}
		if time.Since(lastStatus) >= statusEvery {
			n, err := b.store.CountIndexed(ctx, chainID, []chaindata.HeightRange{{From: 0, To: head}})
			if err == nil {
				secs := time.Since(lastStatus).Seconds()
				elapsed := time.Since(b.workerStart).Seconds()
				wm, _, _ := b.store.Watermark(ctx, chainID, 0)
				line := fmt.Sprintf("status: %d/%d heights indexed, %.1f/s now, %.1f/s overall; watermark %d, newest %d, head %d, lag %d (p95 so far %d); worker rss peak %.0f MiB; disk %.2f GB",
					n[0], head+1, float64(n[0]-min(n[0], lastCount))/secs, float64(n[0])/elapsed, wm, top, head, head-min(head, top), lags.p95(), b.sampleRSS(), gb(b.disk.latest()))
				b.say("%s%s", line, sched.status())
				lastCount = n[0]
			}
			lastStatus = time.Now()
		}
	}
}

// liveEdge is how many of the newest heights may still be in flight on the
// live path when the catch-up counts as done: the blocks of one head-scan
// interval (one block time, at least 1 s; see workerconfig.YAML), at least
// one.
func liveEdge(blockTime time.Duration) uint64 {
	scan := max(blockTime, time.Second)
	return uint64((scan + blockTime - 1) / blockTime)
}

// profiler is the worker's CPU profile (-cpuprofile), fetched in the
// background from the first indexed height on.
type profiler struct {
	done chan struct{}
}

func (b *bench) startProfile(ctx context.Context) *profiler {
	p := &profiler{done: make(chan struct{})}
	o := b.opts
	go func() {
		defer close(p.done)
		// errNoPprof included: the run goes on without.
		if err := cpuProfile(ctx, b.metrics, o.CPUSeconds, o.CPUProfile); err != nil {
			b.say("no CPU profile: %v", err)
		} else {
			b.say("CPU profile of %ds written to %s", o.CPUSeconds, o.CPUProfile)
		}
	}()
	return p
}

// wait waits for the profile to be written; a nil profiler was never
// started.
func (p *profiler) wait(ctx context.Context) error {
	if p == nil {
		return nil
	}
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
