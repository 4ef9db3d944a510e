package streamappend

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the series of the chains' change streams (pkg/stream),
// one set per process: where each appender is and what it appended. The
// query API's streaming connections are pkg/api's.
type Metrics struct {
	// Height is the top height of the streamed chain; the watermark minus
	// it is how far the stream is behind what is indexed.
	Height *prometheus.GaugeVec
	// Seq is the last event's sequence number.
	Seq *prometheus.GaugeVec
	// Events counts events appended, by kind (added, removed).
	Events *prometheus.CounterVec
}

// NewMetrics makes the appender's series and registers them on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	chain := []string{"chain_id"}
	s := &Metrics{
		Height: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "indexer_stream_height",
			Help: "Top height of the chain's change stream (its last block added); below the watermark while the stream catches up.",
		}, chain),
		Seq: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "indexer_stream_seq",
			Help: "Sequence number of the chain's last change-stream event.",
		}, chain),
		Events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "indexer_stream_events_total",
			Help: "Change-stream events appended, by kind (added, removed).",
		}, []string{"chain_id", "kind"}),
	}
	reg.MustRegister(s.Height, s.Seq, s.Events)
	return s
}
