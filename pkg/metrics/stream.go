package metrics

import "github.com/prometheus/client_golang/prometheus"

// Stream are the series of a chain's change stream (pkg/stream): where
// its appender is and what it appended. The query API's streaming
// connections are pkg/api's.
type Stream struct {
	// StreamHeight is the top height of the streamed chain; the watermark
	// minus it is how far the stream is behind what is indexed.
	StreamHeight *prometheus.GaugeVec
	// StreamSeq is the last event's sequence number.
	StreamSeq *prometheus.GaugeVec
	// StreamEvents counts events appended, by kind (added, removed).
	StreamEvents *prometheus.CounterVec
}

func newStream(reg prometheus.Registerer) Stream {
	chain := []string{"chain_id"}
	s := Stream{
		StreamHeight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "indexer_stream_height",
			Help: "Top height of the chain's change stream (its last block added); below the watermark while the stream catches up.",
		}, chain),
		StreamSeq: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "indexer_stream_seq",
			Help: "Sequence number of the chain's last change-stream event.",
		}, chain),
		StreamEvents: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "indexer_stream_events_total",
			Help: "Change-stream events appended, by kind (added, removed).",
		}, []string{"chain_id", "kind"}),
	}
	reg.MustRegister(s.StreamHeight, s.StreamSeq, s.StreamEvents)
	return s
}
