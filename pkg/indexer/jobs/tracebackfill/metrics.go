package tracebackfill

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the backfill's series, one set per process.
type Metrics struct {
	// Backfilled counts heights whose traces the backfill wrote; Failures
	// the heights whose trace it could not have (left for its next pass).
	Backfilled *prometheus.CounterVec
	Failures   *prometheus.CounterVec
	// Written is the indexer's count of call frames written
	// (indexer_traces_written_total, pkg/metrics): the backfill's frames
	// count there too, so that one series says how many frames are in.
	Written *prometheus.CounterVec
}

// NewMetrics makes the backfill's series, registers them on reg, and
// counts its frames into written (nil: not counted).
func NewMetrics(reg prometheus.Registerer, written *prometheus.CounterVec) *Metrics {
	chain := []string{"chain_id"}
	m := &Metrics{
		Backfilled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "indexer_traces_backfilled_heights_total",
			Help: "Heights indexed without traces whose traces the backfill wrote (the blocks are not rewritten).",
		}, chain),
		Failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "indexer_traces_backfill_failures_total",
			Help: "Heights whose trace the backfill could not have (the node failed or refused it); they stay untraced and its next pass asks again.",
		}, chain),
		Written: written,
	}
	reg.MustRegister(m.Backfilled, m.Failures)
	return m
}
