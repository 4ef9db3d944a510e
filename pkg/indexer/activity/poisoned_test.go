package activity

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/metrics"
	"github.com/tideline-dev/tideline/pkg/rpc"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// A poisoned height's series names what failed where, keeps one series
// per height (the newest failure's labels), and goes once the height is
// indexed here or the scans see the watermark pass it.
func TestAPoisonedHeightIsNamedUntilTheWatermarkPassesIt(t *testing.T) {
	a := &Activities{Chain: ChainSetup{ID: "eth"}, Metrics: metrics.New(prometheus.NewRegistry()), Log: zap.NewNop()}
	g := a.Metrics.PoisonedHeight
	count := func() int {
		ch := make(chan prometheus.Metric, 16)
		g.Collect(ch)
		close(ch)
		return len(ch)
	}
	malformed := fetchDetail(&rpc.MalformedError{Method: "eth_getBlockReceipts", Endpoint: "main", Height: 7, Field: "receipts[2].status", Reason: "5 is neither 0 nor 1"})
	a.markPoisoned(7, 10, fetchDetail(&rpc.TransientError{Method: "eth_getBlockByNumber", Endpoint: "backup", Attempts: 5}))
	a.markPoisoned(7, 11, malformed)
	a.markPoisoned(9, 12, writeDetail(nil))
	if n := count(); n != 2 {
		t.Fatalf("%d series, want one per height", n)
	}
	var m dto.Metric
	if err := g.WithLabelValues("eth", "7", "fetch", ErrTypeMalformedResponse, "main", "eth_getBlockReceipts", "receipts[2].status").Write(&m); err != nil {
		t.Fatal(err)
	}
	if v := m.GetGauge().GetValue(); v != 11 {
		t.Fatalf("height 7's series = %g, want its attempt 11 with the malformed field named", v)
	}
	if malformed != (temporal.HeightFailure{Stage: "fetch", Type: ErrTypeMalformedResponse, Endpoint: "main", Method: "eth_getBlockReceipts",
		Field: "receipts[2].status", Reason: "5 is neither 0 nor 1"}) {
		t.Fatalf("detail %+v", malformed)
	}

	if err := a.ReportScan(context.Background(), "eth", types.HeadScanResult{Mode: types.ModeNormal, HasWatermark: true, Watermark: 8, Head: 20, Pending: 12}); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 1 {
		t.Fatalf("%d series after the watermark passed 7, want 1 (height 9)", n)
	}
	a.clearPoisonedHeight(9)
	if n := count(); n != 0 {
		t.Fatalf("%d series after height 9 was indexed, want none", n)
	}
}
