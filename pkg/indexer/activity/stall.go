package activity

import (
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// Telling a height that holds the chain: in normal operation (no
// catch-up) the watermark follows the head within a block or two, so a
// watermark that stands still while heights above it are pending names
// one height in flight too long, the one above it. Each HeadScan's report
// (ReportScan) looks; the gauge indexer_watermark_stalled_seconds says
// for how long, and one Warn per stall names the height and its workflow.
// During a catch-up the watermark moves little by design (the newest
// heights go first): the Scheduler's progress says what runs, and the
// gauge reads 0.

// stallWarnAfter is how long a watermark may stand still with heights
// pending before the height above it is named: several heartbeat timeouts
// (a lost attempt is retried within one, 5 s by default) and scans.
const stallWarnAfter = 30 * time.Second

// stallWatch is one chain's watermark as this process's scans saw it.
// Each process watches on its own: with several workers each sees the
// scans it ran, so a stall is named at most a few scan intervals late.
type stallWatch struct {
	mu        sync.Mutex
	watermark uint64
	since     time.Time // when this process first saw the watermark stand with heights pending
	warned    bool
}

// stallState is what one observation found.
type stallState struct {
	stalled   time.Duration // 0 unless heights are pending above a watermark that stands
	warn      bool          // the stall just passed stallWarnAfter
	recovered time.Duration // a warned stall ended, after this long
}

func (w *stallWatch) observe(res types.HeadScanResult, now time.Time) stallState {
	w.mu.Lock()
	defer w.mu.Unlock()
	var st stallState
	pending := res.Mode == types.ModeNormal && res.HasWatermark && res.Head > res.Watermark
	if !pending || w.since.IsZero() || res.Watermark != w.watermark {
		if w.warned {
			st.recovered = now.Sub(w.since)
		}
		w.warned = false
		w.since = time.Time{}
		if pending {
			w.watermark, w.since = res.Watermark, now
		}
		return st
	}
	st.stalled = now.Sub(w.since)
	if st.stalled >= stallWarnAfter && !w.warned {
		w.warned, st.warn = true, true
	}
	return st
}

// reportStall updates the gauge and logs the start and end of a stall.
func (a *Activities) reportStall(res types.HeadScanResult) {
	st := a.stall.observe(res, time.Now())
	a.Metrics.WatermarkStalled.WithLabelValues(a.Chain.ID).Set(st.stalled.Seconds())
	switch {
	case st.warn:
		held := res.Watermark + 1
		a.logger().Warn("a height holds the watermark: in flight longer than expected with later heights pending; its workflow's history (Temporal Web UI) says what it waits for",
			zap.Uint64("height", held), zap.String("workflow_id", temporal.IndexBlockID(a.Chain.ID, held)),
			zap.Duration("stalled_for", st.stalled), zap.Uint64("head", res.Head), zap.Uint64("pending", res.Pending))
	case st.recovered > 0:
		a.logger().Info("the watermark moves again", zap.Uint64("watermark", res.Watermark), zap.Duration("stalled_for", st.recovered))
	}
}
