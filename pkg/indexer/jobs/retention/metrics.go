package retention

import "github.com/prometheus/client_golang/prometheus"

// Metrics are retention's series, one set per process, labelled by chain.
type Metrics struct {
	// PrunedHeight is the highest height whose detailed rows retention
	// removed.
	PrunedHeight *prometheus.GaugeVec
	// Deletions counts what it started, by method (partition: a partition
	// dropped; mutation: a DELETE mutation), per table.
	Deletions *prometheus.CounterVec
}

// NewMetrics makes retention's series and registers them on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		PrunedHeight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "indexer_pruned_height",
			Help: "Highest height whose detailed rows retention removed (blocks, transactions, logs, look-up tables); only chains with retention on have it.",
		}, []string{"chain_id"}),
		Deletions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "indexer_prune_deletions_total",
			Help: "Deletions retention started, by table and method: partition (a partition holding only this chain, wholly pruned, dropped) or mutation (ALTER TABLE ... DELETE, run by ClickHouse in the background).",
		}, []string{"chain_id", "table", "method"}),
	}
	reg.MustRegister(m.PrunedHeight, m.Deletions)
	return m
}
