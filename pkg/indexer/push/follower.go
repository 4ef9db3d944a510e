// Package push is the push source of the indexer: a Follower per chain
// subscribes to the node's new heads and starts each announced height's
// IndexBlockWorkflow at once, at the top priority; HeadScan leaves to it
// the heights it is about to start. See README.md.
package push

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/metrics"
	"github.com/tideline-dev/tideline/pkg/rpc"
)

// Defaults of Config.
const (
	DefaultBackoffInitial = 500 * time.Millisecond
	DefaultBackoffMax     = 30 * time.Second
	DefaultStartTimeout   = 10 * time.Second
)

// queueSize bounds the heads received and not yet started. Heads come one
// per block and a start takes milliseconds; a full queue means Temporal
// is far behind, and the oldest queued head is dropped (pull takes it:
// push's Latest passes it).
const queueSize = 64

// Config configures a Follower.
type Config struct {
	ChainID string
	// Source streams the chain's new heads.
	Source rpc.HeadSource
	// Start starts the IndexBlockWorkflow of one announced height
	// (activity.StartLive); started is false when Temporal refused it
	// because the height has or had a run (another worker's follower, or
	// pull, was first). The follower never fetches a block itself.
	Start func(ctx context.Context, height uint64) (started bool, err error)
	// StallAfter is how long push may go without delivering a head before
	// it is unhealthy; a subscription silent that long is also renewed.
	StallAfter time.Duration
	// BackoffInitial and BackoffMax bound the wait before subscribing
	// again after a failure: doubling, capped, with jitter; reset once a
	// subscription delivers. Defaults 500ms and 30s.
	BackoffInitial time.Duration
	BackoffMax     time.Duration
	// StartTimeout bounds one Start call (default 10s).
	StartTimeout time.Duration
	Metrics      *metrics.Metrics
	Log          *zap.Logger
	// Now is the clock (tests); default time.Now.
	Now func() time.Time
}

// Follower follows one chain's new heads. Run it once; Status may be
// called from any goroutine.
type Follower struct {
	cfg Config
	log *zap.Logger

	// queue carries heads from the subscription to the start loop.
	queue chan rpc.Head

	mu           sync.Mutex
	latest       uint64    // highest height delivered
	delivered    bool      // any head delivered yet
	lastDelivery time.Time // when the last head was delivered
	subscribed   bool
}

// New checks cfg and returns a follower; Run starts it.
func New(cfg Config) (*Follower, error) {
	switch {
	case cfg.ChainID == "":
		return nil, errors.New("push: Config.ChainID is required")
	case cfg.Source == nil:
		return nil, errors.New("push: Config.Source is required")
	case cfg.Start == nil:
		return nil, errors.New("push: Config.Start is required")
	case cfg.StallAfter <= 0:
		return nil, errors.New("push: Config.StallAfter must be positive")
	case cfg.Metrics == nil:
		return nil, errors.New("push: Config.Metrics is required")
	}
	if cfg.BackoffInitial <= 0 {
		cfg.BackoffInitial = DefaultBackoffInitial
	}
	if cfg.BackoffMax < cfg.BackoffInitial {
		cfg.BackoffMax = max(DefaultBackoffMax, cfg.BackoffInitial)
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = DefaultStartTimeout
	}
	if cfg.Log == nil {
		cfg.Log = zap.NewNop()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Follower{
		cfg:   cfg,
		log:   cfg.Log.With(zap.String("chain_id", cfg.ChainID), zap.String("source", metrics.SourcePush)),
		queue: make(chan rpc.Head, queueSize),
	}, nil
}

// Status returns the highest height push has delivered (started, found
// started, or failed to start and so left to pull) and whether push is
// healthy: subscribed, and a head delivered on this subscription within
// StallAfter.
func (f *Follower) Status() (latest uint64, healthy bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	healthy = f.subscribed && f.delivered && f.cfg.Now().Sub(f.lastDelivery) < f.cfg.StallAfter
	return f.latest, healthy
}

// Run follows the chain until ctx ends: it subscribes (again after every
// failure, with backoff) and starts each head's IndexBlockWorkflow.
func (f *Follower) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { f.startLoop(ctx) })
	wg.Go(func() { f.healthLoop(ctx) })
	f.subscribeLoop(ctx)
	wg.Wait()
	f.cfg.Metrics.PushHealthy.WithLabelValues(f.cfg.ChainID).Set(0)
}

// subscribeLoop keeps a subscription open until ctx ends.
func (f *Follower) subscribeLoop(ctx context.Context) {
	backoff := f.cfg.BackoffInitial
	// Resubscribing is the follower's: pkg/rpc retries requests, not a
	// stream that ended (SubscribeHeads leaves that to its caller), and the
	// follower runs beside the workers, in no activity.
	for ctx.Err() == nil {
		got, err := f.follow(ctx)
		if ctx.Err() != nil {
			return
		}
		if got > 0 {
			backoff = f.cfg.BackoffInitial
		}
		// Full jitter over [backoff/2, backoff]: followers of many
		// workers do not resubscribe in step.
		wait := backoff/2 + time.Duration(rand.Int64N(int64(backoff/2)+1))
		f.log.Warn("head subscription ended; subscribing again", zap.Error(err),
			zap.Int("heads", got), zap.Duration("wait", wait))
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(2*backoff, f.cfg.BackoffMax)
	}
}

// errSilent ends a subscription that delivered nothing for StallAfter: a
// half-open connection shows no error, so it is renewed.
var errSilent = errors.New("no head within stall_after; subscription renewed")

// follow runs one subscription until it ends and returns how many heads it
// gave and why it ended.
func (f *Follower) follow(ctx context.Context) (int, error) {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	heads, errs, err := f.cfg.Source.SubscribeHeads(sctx)
	if err != nil {
		return 0, err
	}
	f.setSubscribed(true)
	defer f.setSubscribed(false)
	f.log.Info("subscribed to new heads")
	silent := time.NewTimer(f.cfg.StallAfter)
	defer silent.Stop()
	got := 0
	var ended error
	for heads != nil {
		select {
		case h, ok := <-heads:
			if !ok {
				heads = nil
				continue
			}
			got++
			f.enqueue(h)
			silent.Reset(f.cfg.StallAfter)
		case <-silent.C:
			ended = errSilent
			cancel()
		}
	}
	select {
	case err = <-errs:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if ended != nil {
		err = ended
	}
	return got, err
}

// enqueue hands a head to the start loop; when the queue is full the
// oldest head gives way (a newer head is worth more, and pull takes the
// dropped one once Latest passes it).
func (f *Follower) enqueue(h rpc.Head) {
	for {
		select {
		case f.queue <- h:
			return
		default:
		}
		select {
		case old := <-f.queue:
			f.log.Warn("starting far behind the head stream; dropped a queued head, pull takes it",
				zap.Uint64("dropped", old.Number), zap.Uint64("head", h.Number))
		default:
		}
	}
}

// startLoop starts heads in arrival order.
func (f *Follower) startLoop(ctx context.Context) {
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case h := <-f.queue:
			failing = f.deliver(ctx, h, failing)
		}
	}
}

// deliver starts one head's IndexBlockWorkflow and records the head as
// delivered, started or not: a height push failed to start falls at or
// below Latest, where HeadScan starts it by pull. failing says whether
// the previous start failed (one Warn per outage, not per head); the new
// value is returned.
func (f *Follower) deliver(ctx context.Context, h rpc.Head, failing bool) bool {
	sctx, cancel := context.WithTimeout(ctx, f.cfg.StartTimeout)
	started, err := f.cfg.Start(sctx, h.Number)
	cancel()
	switch {
	case ctx.Err() != nil:
		return failing
	case err != nil && !failing:
		f.log.Warn("starting a pushed head failed; pull takes the height", zap.Uint64("height", h.Number), zap.Error(err))
	case err != nil:
		f.log.Debug("starting a pushed head failed again", zap.Uint64("height", h.Number), zap.Error(err))
	case failing:
		f.log.Info("starting pushed heads works again", zap.Uint64("height", h.Number))
	case !started:
		f.log.Debug("pushed head started already; not started again", zap.Uint64("height", h.Number))
	}
	f.mu.Lock()
	f.latest = max(f.latest, h.Number)
	f.delivered = true
	f.lastDelivery = f.cfg.Now()
	latest := f.latest
	f.mu.Unlock()
	f.cfg.Metrics.PushHeadHeight.WithLabelValues(f.cfg.ChainID).Set(float64(latest))
	f.updateHealth()
	return err != nil
}

// healthLoop keeps push_healthy current when nothing arrives.
func (f *Follower) healthLoop(ctx context.Context) {
	period := min(max(f.cfg.StallAfter/4, 100*time.Millisecond), 5*time.Second)
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		f.updateHealth()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (f *Follower) updateHealth() {
	_, healthy := f.Status()
	v := 0.0
	if healthy {
		v = 1
	}
	f.cfg.Metrics.PushHealthy.WithLabelValues(f.cfg.ChainID).Set(v)
}

func (f *Follower) setSubscribed(ok bool) {
	f.mu.Lock()
	f.subscribed = ok
	if !ok {
		// A renewed subscription is unproven until it delivers a head;
		// until then pull covers everything.
		f.delivered = false
	}
	f.mu.Unlock()
	f.updateHealth()
}
