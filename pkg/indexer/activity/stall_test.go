package activity

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/metrics"
)

// A watermark that stands with heights pending is named once it has stood
// for stallWarnAfter, by the height above it and its workflow; it is told
// again when it moves. A catch-up, or nothing pending, is no stall.
func TestAStandingWatermarkNamesTheHeightThatHoldsIt(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	a := &Activities{Chain: ChainSetup{ID: "eth"}, Metrics: metrics.New(prometheus.NewRegistry()), Log: zap.New(core)}
	normal := func(watermark, head uint64) types.HeadScanResult {
		return types.HeadScanResult{Mode: types.ModeNormal, HasWatermark: true, Watermark: watermark, Head: head, Pending: head - watermark}
	}
	t0 := time.Unix(1_000_000, 0)
	stalled := func() float64 {
		var m dto.Metric
		if err := a.Metrics.WatermarkStalled.WithLabelValues("eth").Write(&m); err != nil {
			t.Fatal(err)
		}
		return m.GetGauge().GetValue()
	}

	if st := a.stall.observe(normal(100, 104), t0); st != (stallState{}) {
		t.Fatalf("first look: %+v, want nothing", st)
	}
	if st := a.stall.observe(normal(100, 110), t0.Add(stallWarnAfter-time.Second)); st.warn || st.stalled != stallWarnAfter-time.Second {
		t.Fatalf("before the bound: %+v", st)
	}
	if st := a.stall.observe(normal(100, 112), t0.Add(stallWarnAfter)); !st.warn {
		t.Fatalf("at the bound: %+v, want a warning", st)
	}
	if st := a.stall.observe(normal(100, 113), t0.Add(stallWarnAfter+time.Second)); st.warn {
		t.Fatalf("warned twice for one stall: %+v", st)
	}
	if st := a.stall.observe(normal(113, 113), t0.Add(stallWarnAfter+5*time.Second)); st.recovered != stallWarnAfter+5*time.Second {
		t.Fatalf("the watermark moved: %+v, want it recovered after the whole stall", st)
	}
	// A catch-up moves the watermark little by design: never a stall.
	catchup := types.HeadScanResult{Mode: types.ModeCatchup, HasWatermark: true, Watermark: 5, Head: 90_000, Pending: 89_995}
	for i := range 3 {
		if st := a.stall.observe(catchup, t0.Add(time.Duration(i)*time.Hour)); st != (stallState{}) {
			t.Fatalf("catch-up %d: %+v, want nothing", i, st)
		}
	}

	// Through the report: the gauge and one Warn naming the height.
	a.stall = stallWatch{}
	a.reportStall(normal(200, 205))
	a.stall.since = a.stall.since.Add(-stallWarnAfter - time.Second) // stood for longer than the bound
	a.reportStall(normal(200, 230))
	if got := stalled(); got < stallWarnAfter.Seconds() {
		t.Fatalf("indexer_watermark_stalled_seconds = %g, want at least %g", got, stallWarnAfter.Seconds())
	}
	warns := logs.FilterMessageSnippet("holds the watermark").All()
	if len(warns) != 1 {
		t.Fatalf("%d warnings, want 1: %v", len(warns), logs.All())
	}
	f := warns[0].ContextMap()
	if f["height"] != uint64(201) || f["workflow_id"] != "eth:index:201" || f["chain_id"] != "eth" {
		t.Fatalf("the warning names %v, want height 201 of eth and its workflow", f)
	}
	a.reportStall(normal(230, 231))
	if got := stalled(); got != 0 {
		t.Fatalf("indexer_watermark_stalled_seconds = %g after the watermark moved, want 0", got)
	}
	if logs.FilterMessage("the watermark moves again").Len() != 1 {
		t.Fatalf("the end of the stall was not told: %v", logs.All())
	}
}
