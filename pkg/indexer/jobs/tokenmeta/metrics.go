package tokenmeta

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the job's series, one set per process. The write path's
// token series (transfers, malformed transfer logs) are pkg/metrics'.
type Metrics struct {
	// Asked counts tokens asked for their metadata, by outcome: complete
	// (name, symbol and decimals), partial, none.
	Asked *prometheus.CounterVec
	// Height is token_metadata_height: every token with a transfer up to
	// it has its metadata.
	Height *prometheus.GaugeVec
	// Delay is, for each token asked, how long at most its transfers were
	// shown without its metadata (delayBound).
	Delay *prometheus.HistogramVec
}

// NewMetrics makes the job's series and registers them on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Asked: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "indexer_token_metadata_total",
			Help: "Tokens asked for their metadata with eth_call, by outcome (complete, partial, none).",
		}, []string{"chain_id", "outcome"}),
		Height: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "indexer_token_metadata_height",
			Help: "Height up to which every token with a transfer has its metadata (token_metadata_height); trails indexer_watermark_height by about the job's interval when it keeps up.",
		}, []string{"chain_id"}),
		Delay: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "indexer_token_metadata_delay_seconds",
			Help:    "For each token asked, an upper bound of how long its first transfer was indexed without the token's metadata: from the later of the transfer's write and the last run that saw the watermark below it, to the metadata's write.",
			Buckets: []float64{1, 2.5, 5, 10, 15, 20, 30, 60, 120, 300, 900, 3600, 4 * 3600},
		}, []string{"chain_id"}),
	}
	reg.MustRegister(m.Asked, m.Height, m.Delay)
	return m
}
