package activity

import (
	"strconv"
	"sync"

	"github.com/tideline-dev/tideline/pkg/temporal"
)

// A poisoned height is one whose IndexBlock attempt failed temporal.PoisonAttempts
// times or more (about five minutes of failures at the activity's backoff):
// no outage of a node or the database lasts that long, so something in
// the height's answer or rows is wrong. It is isolated, not skipped:
//
//   - it is still retried, at the backoff's ceiling (once a minute), so
//     it costs the node one request a minute and heals by itself when the
//     endpoint's answer does;
//   - every other height goes on being indexed, and the watermark stays
//     below it (it is contiguous: nothing above a missing height counts as
//     indexed, so readers never see a hole);
//   - the gauge indexer_poisoned_height names it, with the stage and, for
//     a fetch, the endpoint, method and field at fault: the alert
//     TidelinePoisonedHeight fires on it, and `indexer status` shows the
//     same from Temporal's record of the last attempt.
//
// The gauge is this process's: one series per height while it fails here,
// removed when the height is indexed (here, or anywhere: the scans' report
// removes every series at or below the watermark). A process that
// restarts sets it again on the height's next failed attempt, since the
// attempt count is Temporal's.

// poisonedHeights are the series this process set, by height.
type poisonedHeights struct {
	mu     sync.Mutex
	labels map[uint64][]string
}

// markPoisoned sets the height's series to its attempt count.
func (a *Activities) markPoisoned(height uint64, attempt int32, d temporal.HeightFailure) {
	p := &a.poisoned
	lv := []string{a.Chain.ID, strconv.FormatUint(height, 10), d.Stage, d.Type, d.Endpoint, d.Method, d.Field}
	p.mu.Lock()
	defer p.mu.Unlock()
	a.dropPoisonedLocked(height)
	if p.labels == nil {
		p.labels = map[uint64][]string{}
	}
	p.labels[height] = lv
	a.Metrics.PoisonedHeight.WithLabelValues(lv...).Set(float64(attempt))
}

// clearPoisoned removes the series of every height at or below upTo.
func (a *Activities) clearPoisoned(upTo uint64) {
	p := &a.poisoned
	p.mu.Lock()
	defer p.mu.Unlock()
	for h := range p.labels {
		if h <= upTo {
			a.dropPoisonedLocked(h)
		}
	}
}

// clearPoisonedHeight removes one height's series, once it is indexed.
func (a *Activities) clearPoisonedHeight(height uint64) {
	p := &a.poisoned
	p.mu.Lock()
	defer p.mu.Unlock()
	a.dropPoisonedLocked(height)
}

// dropPoisonedLocked removes the height's series, if any; p.mu is held.
func (a *Activities) dropPoisonedLocked(height uint64) {
	p := &a.poisoned
	if lv, ok := p.labels[height]; ok {
		a.Metrics.PoisonedHeight.DeleteLabelValues(lv...)
		delete(p.labels, height)
	}
}
