package aggregate

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the aggregator's series, one set per process, labelled by
// chain.
type Metrics struct {
	// Height is the seed's aggregator_height: the highest height counted.
	Height *prometheus.GaugeVec
	// Rewinds counts the reorganisations found below it.
	Rewinds *prometheus.CounterVec
}

// NewMetrics makes the aggregator's series and registers them on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Height: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "indexer_aggregator_height",
			Help: "Highest height counted into aggregates (cumulative transactions, logs and bytes); every height from the start height up to it is counted. Trails indexer_watermark_height by about aggregator.interval.",
		}, []string{"chain_id"}),
		Rewinds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "indexer_aggregator_rewinds_total",
			Help: "Reorganisations the aggregator found below its height (its last counted block no longer the stored canonical one); it rewound to the fork and counted again.",
		}, []string{"chain_id"}),
	}
	reg.MustRegister(m.Height, m.Rewinds)
	return m
}
