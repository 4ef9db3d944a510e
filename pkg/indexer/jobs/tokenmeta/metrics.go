package tokenmeta

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the job's series, one set per process. The write path's
// token series (transfers, malformed transfer logs) are pkg/metrics'.
type Metrics struct {
	// Asked counts tokens asked for their metadata, by outcome: complete
	// (name, symbol and decimals), partial, none.
	Asked *prometheus.CounterVec
}

// NewMetrics makes the job's series and registers them on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{Asked: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "indexer_token_metadata_total",
		Help: "Tokens asked for their metadata with eth_call, by outcome (complete, partial, none).",
	}, []string{"chain_id", "outcome"})}
	reg.MustRegister(m.Asked)
	return m
}
