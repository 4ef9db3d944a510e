package metrics

import "github.com/prometheus/client_golang/prometheus"

// Traces are the series of a chain's call traces (issue 20): the frames
// written (the backfill's of heights indexed without them count here too;
// its own series are pkg/indexer/jobs/tracebackfill's). The RPC side
// (rpc_endpoint_traces) is pkg/rpc's.
type Traces struct {
	// TracesWritten counts call frames written with their blocks or by the
	// backfill.
	TracesWritten *prometheus.CounterVec
}

func newTraces(reg prometheus.Registerer) Traces {
	chain := []string{"chain_id"}
	t := Traces{
		TracesWritten: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "indexer_traces_written_total",
			Help: "Call frames (internal transactions, the top-level call included) written, with their blocks or by the traces backfill.",
		}, chain),
	}
	reg.MustRegister(t.TracesWritten)
	return t
}
