package catchup

import (
	"context"
	"sync"
	"time"

	"github.com/tideline-dev/tideline/test/internal/benchkit"
)

// every calls f every period until ctx ends. The samplers run apart from
// the main loop, whose queries can take longer than a period on a busy
// machine.
func every(ctx context.Context, period time.Duration, f func()) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		f()
	}
}

// lagSampler samples the live lag every second, apart from the main loop
// whose status and watermark queries can take longer than a second on a
// busy machine: head of the chain minus the newest indexed height, from the
// first indexed height on. It also samples the worker's peak RSS.
type lagSampler struct {
	mu   sync.Mutex
	lags []uint64
	// edge is the index in lags of the first sample at a lag of at most
	// one block (-1 before): the worker's start-up (its first scans, the
	// scheduler's first starts) is behind it, and what follows is the lag a
	// long catch-up keeps. It is reported beside the p95 of every sample,
	// which a short run's start-up decides.
	edge int
}

func (s *lagSampler) run(ctx context.Context, b *bench) {
	every(ctx, time.Second, func() {
		b.sampleRSS()
		head := b.sim.Head()
		top, found, err := b.store.LastIndexed(ctx, chainID)
		if err != nil || !found {
			return
		}
		s.record(head - min(head, top))
	})
}

func newLagSampler() *lagSampler { return &lagSampler{edge: -1} }

func (s *lagSampler) record(lag uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if lag <= 1 && s.edge < 0 {
		s.edge = len(s.lags)
	}
	s.lags = append(s.lags, lag)
}

func (s *lagSampler) p95() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return percentile(s.lags, 95)
}

func (s *lagSampler) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.lags)
}

// afterEdge is the number of samples from the first one at the live edge
// on, their p95 and max; n is 0 when the edge was never reached.
func (s *lagSampler) afterEdge() (n int, p95, maxLag uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.edge < 0 {
		return 0, 0, 0
	}
	rest := s.lags[s.edge:]
	return len(rest), percentile(rest, 95), maxOf(rest)
}

func (s *lagSampler) result() (p95, maxLag uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return percentile(s.lags, 95), maxOf(s.lags)
}

// sampleRSS records the worker's peak RSS; VmHWM is already a peak, so the
// last successful read is the answer, sampled so a worker that dies still
// leaves one.
func (b *bench) sampleRSS() float64 {
	if mib, err := benchkit.PeakRSSMiB(b.worker.Pid()); err == nil {
		kib := uint64(mib * 1024)
		for {
			old := b.peakRSS.Load()
			if kib <= old || b.peakRSS.CompareAndSwap(old, kib) {
				break
			}
		}
	}
	return float64(b.peakRSS.Load()) / 1024
}
