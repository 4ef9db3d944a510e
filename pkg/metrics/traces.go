package metrics

import "github.com/prometheus/client_golang/prometheus"

// Traces are the series of a chain's call traces (issue 20): the frames
// written, and the backfill of heights indexed without them. The RPC side
// (rpc_endpoint_traces) is pkg/rpc's.
type Traces struct {
	// TracesWritten counts call frames written with their blocks or by the
	// backfill.
	TracesWritten *prometheus.CounterVec
	// TracesBackfilled counts heights whose traces the backfill wrote;
	// TracesBackfillFailures the heights whose trace it could not have
	// (left for its next pass).
	TracesBackfilled       *prometheus.CounterVec
	TracesBackfillFailures *prometheus.CounterVec
}

func newTraces(reg prometheus.Registerer) Traces {
	chain := []string{"chain_id"}
	t := Traces{
		TracesWritten: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "indexer_traces_written_total",
			Help: "Call frames (internal transactions, the top-level call included) written, with their blocks or by the traces backfill.",
		}, chain),
		TracesBackfilled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "indexer_traces_backfilled_heights_total",
			Help: "Heights indexed without traces whose traces the backfill wrote (the blocks are not rewritten).",
		}, chain),
		TracesBackfillFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "indexer_traces_backfill_failures_total",
			Help: "Heights whose trace the backfill could not have (the node failed or refused it); they stay untraced and its next pass asks again.",
		}, chain),
	}
	reg.MustRegister(t.TracesWritten, t.TracesBackfilled, t.TracesBackfillFailures)
	return t
}
