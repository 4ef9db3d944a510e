package push_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"github.com/tideline-dev/tideline/internal/testkit"
	"github.com/tideline-dev/tideline/pkg/indexer/push"
	"github.com/tideline-dev/tideline/pkg/metrics"
	"github.com/tideline-dev/tideline/pkg/rpc"
)

const chainID = "test"

// fakeSub is one subscription of fakeSource, driven by the test. It keeps
// the HeadSource contract: the reason goes on errs before heads closes, and
// the caller's context ends it.
type fakeSub struct {
	ctx   context.Context
	heads chan rpc.Head
	errs  chan error
	once  sync.Once
}

func (s *fakeSub) end(err error) {
	s.once.Do(func() {
		s.errs <- err
		close(s.heads)
	})
}

func (s *fakeSub) send(t *testing.T, n uint64) {
	t.Helper()
	select {
	case s.heads <- rpc.Head{Number: n}:
	case <-s.ctx.Done():
		t.Fatalf("head %d: subscription ended", n)
	case <-time.After(10 * time.Second):
		t.Fatalf("head %d not taken within 10s", n)
	}
}

// fakeSource fails its first failFirst subscriptions, then hands each new
// subscription to the test on subs.
type fakeSource struct {
	mu        sync.Mutex
	failFirst int
	calls     int
	subs      chan *fakeSub
}

func newSource(failFirst int) *fakeSource {
	return &fakeSource{failFirst: failFirst, subs: make(chan *fakeSub, 100)}
}

func (s *fakeSource) SubscribeHeads(ctx context.Context) (<-chan rpc.Head, <-chan error, error) {
	s.mu.Lock()
	s.calls++
	n := s.calls
	s.mu.Unlock()
	if n <= s.failFirst {
		return nil, nil, errors.New("connection refused")
	}
	sub := &fakeSub{ctx: ctx, heads: make(chan rpc.Head), errs: make(chan error, 1)}
	go func() {
		<-ctx.Done()
		sub.end(ctx.Err())
	}()
	s.subs <- sub
	return sub.heads, sub.errs, nil
}

func (s *fakeSource) next(t *testing.T) *fakeSub {
	t.Helper()
	select {
	case sub := <-s.subs:
		return sub
	case <-time.After(10 * time.Second):
		t.Fatal("no subscription within 10s")
	}
	return nil
}

// recorder is the fake of starting: it records the heights asked, fails
// those in fail, reports those in taken as started already, and, with
// hold set, blocks each start until a value is received from it.
type recorder struct {
	mu      sync.Mutex
	started []uint64
	fail    map[uint64]bool
	taken   map[uint64]bool
	hold    chan struct{}
}

func (r *recorder) start(ctx context.Context, h uint64) (bool, error) {
	r.mu.Lock()
	r.started = append(r.started, h)
	hold, fail, taken := r.hold, r.fail[h], r.taken[h]
	r.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
	if fail {
		return false, errors.New("frontend unavailable")
	}
	return !taken, nil
}

func (r *recorder) heights() []uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]uint64(nil), r.started...)
}

// clock is a settable clock for health.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

type harness struct {
	f   *push.Follower
	src *fakeSource
	rec *recorder
	clk *clock
	m   *metrics.Metrics
}

// start runs a follower until the test ends.
func start(t *testing.T, src *fakeSource, rec *recorder, tweak func(*push.Config)) *harness {
	t.Helper()
	h := &harness{src: src, rec: rec, clk: &clock{now: time.Unix(1_700_000_000, 0)}, m: metrics.New(prometheus.NewRegistry())}
	cfg := push.Config{
		ChainID:        chainID,
		Source:         src,
		Start:          rec.start,
		StallAfter:     time.Minute,
		BackoffInitial: time.Millisecond,
		BackoffMax:     5 * time.Millisecond,
		Metrics:        h.m,
		Log:            zaptest.NewLogger(t),
		Now:            h.clk.Now,
	}
	if tweak != nil {
		tweak(&cfg)
	}
	f, err := push.New(cfg)
	require.NoError(t, err)
	h.f = f
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		f.Run(ctx)
		close(done)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("Run did not return within 10s of its context ending")
		}
	})
	return h
}

func (h *harness) waitStatus(t *testing.T, latest uint64, healthy bool) {
	t.Helper()
	require.Eventually(t, func() bool {
		l, ok := h.f.Status()
		return l == latest && ok == healthy
	}, 10*time.Second, time.Millisecond, "status (%d, %v)", latest, healthy)
}

// Heads are started in order; each delivery advances Latest and makes
// push healthy; the metrics follow.
func TestFollowerStartsHeads(t *testing.T) {
	h := start(t, newSource(0), &recorder{}, nil)
	l, healthy := h.f.Status()
	require.Zero(t, l)
	require.False(t, healthy, "nothing delivered yet")
	sub := h.src.next(t)
	for n := uint64(10); n <= 12; n++ {
		sub.send(t, n)
		h.waitStatus(t, n, true)
	}
	require.Equal(t, []uint64{10, 11, 12}, h.rec.heights())
	require.Equal(t, 12.0, testkit.Value(t, h.m.PushHeadHeight.WithLabelValues(chainID)))
	require.Eventually(t, func() bool { return testkit.Value(t, h.m.PushHealthy.WithLabelValues(chainID)) == 1 },
		10*time.Second, time.Millisecond)

	// A head below Latest (a reorganisation) is asked for again (the
	// start is refused: the height ran); Latest stays.
	h.rec.mu.Lock()
	h.rec.taken = map[uint64]bool{11: true}
	h.rec.mu.Unlock()
	sub.send(t, 11)
	require.Eventually(t, func() bool { return len(h.rec.heights()) == 4 }, 10*time.Second, time.Millisecond)
	h.waitStatus(t, 12, true)
}

// Heads arriving while a start is slow wait in order in the queue; none
// is lost or reordered.
func TestFollowerQueuesHeadsBehindASlowStart(t *testing.T) {
	rec := &recorder{hold: make(chan struct{})}
	h := start(t, newSource(0), rec, nil)
	sub := h.src.next(t)
	sub.send(t, 1)
	require.Eventually(t, func() bool { return len(rec.heights()) == 1 }, 10*time.Second, time.Millisecond)
	for n := uint64(2); n <= 11; n++ {
		sub.send(t, n) // taken by the subscription loop while start 1 waits
	}
	l, _ := h.f.Status()
	require.Zero(t, l, "nothing delivered while the first start waits")
	for range 11 {
		rec.hold <- struct{}{}
	}
	h.waitStatus(t, 11, true)
	require.Equal(t, []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, rec.heights())
}

// Healthy needs a delivery within StallAfter and an open subscription.
func TestFollowerHealth(t *testing.T) {
	h := start(t, newSource(0), &recorder{}, func(c *push.Config) { c.StallAfter = time.Hour })
	sub := h.src.next(t)
	sub.send(t, 5)
	h.waitStatus(t, 5, true)
	h.clk.add(59 * time.Minute)
	_, healthy := h.f.Status()
	require.True(t, healthy)
	h.clk.add(time.Minute)
	_, healthy = h.f.Status()
	require.False(t, healthy, "stalled: no head for stall_after")
	sub.send(t, 6)
	h.waitStatus(t, 6, true)

	// A dropped subscription is unhealthy at once, until the next head
	// arrives on the new one.
	sub.end(errors.New("connection reset"))
	h.waitStatus(t, 6, false)
	sub = h.src.next(t)
	sub.send(t, 7)
	h.waitStatus(t, 7, true)
}

// Failed subscriptions are retried with backoff until one works; a
// subscription that ends is renewed.
func TestFollowerResubscribes(t *testing.T) {
	src := newSource(3)
	h := start(t, src, &recorder{}, nil)
	sub := src.next(t)
	src.mu.Lock()
	require.Equal(t, 4, src.calls, "three failures, then a subscription")
	src.mu.Unlock()
	sub.send(t, 1)
	h.waitStatus(t, 1, true)
	sub.end(errors.New("connection reset"))
	sub = src.next(t)
	sub.send(t, 2)
	h.waitStatus(t, 2, true)
}

// A subscription silent for StallAfter (a half-open connection shows no
// error) is cancelled and made again.
func TestFollowerRenewsSilentSubscription(t *testing.T) {
	src := newSource(0)
	start(t, src, &recorder{}, func(c *push.Config) { c.StallAfter = 50 * time.Millisecond })
	first := src.next(t)
	second := src.next(t)
	require.Error(t, first.ctx.Err(), "the silent subscription was cancelled")
	require.NoError(t, second.ctx.Err())
}

// A height push fails to start still counts as delivered: Latest passes
// it, so HeadScan starts it by pull; the next head is started as usual.
func TestFollowerFailedStartLeavesHeightToPull(t *testing.T) {
	rec := &recorder{fail: map[uint64]bool{8: true}}
	h := start(t, newSource(0), rec, nil)
	sub := h.src.next(t)
	sub.send(t, 8)
	h.waitStatus(t, 8, true)
	sub.send(t, 9)
	h.waitStatus(t, 9, true)
	require.Equal(t, []uint64{8, 9}, rec.heights())
}

func TestNewChecksConfig(t *testing.T) {
	m := metrics.New(prometheus.NewRegistry())
	ok := push.Config{ChainID: chainID, Source: newSource(0), Start: (&recorder{}).start, StallAfter: time.Second, Metrics: m}
	_, err := push.New(ok)
	require.NoError(t, err)
	for name, broken := range map[string]func(*push.Config){
		"chain":   func(c *push.Config) { c.ChainID = "" },
		"source":  func(c *push.Config) { c.Source = nil },
		"start":   func(c *push.Config) { c.Start = nil },
		"stall":   func(c *push.Config) { c.StallAfter = 0 },
		"metrics": func(c *push.Config) { c.Metrics = nil },
	} {
		c := ok
		broken(&c)
		_, err := push.New(c)
		require.Error(t, err, name)
	}
}
