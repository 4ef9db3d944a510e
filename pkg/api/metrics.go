package api

import "github.com/prometheus/client_golang/prometheus"

// metrics are the API's own series, on its own /metrics. Labels are route
// patterns, status codes, chain IDs and Etherscan module/action names from
// a fixed list: never a raw path, a hash, an address or a client address.
type metrics struct {
	requests    *prometheus.CounterVec   // route, code
	duration    *prometheus.HistogramVec // route
	rateLimited *prometheus.CounterVec   // route
	etherscan   *prometheus.CounterVec   // module, action
	watermark   *prometheus.GaugeVec     // chain_id
	// The change stream (stream*.go).
	streamsOpen  prometheus.GaugeFunc
	streamEvents *prometheus.CounterVec // chain_id
	streamsEnded *prometheus.CounterVec // chain_id, reason
}

func newMetrics(reg prometheus.Registerer, open func() float64) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "api_requests_total",
			Help: "Requests answered by the query API, by route pattern and HTTP status code.",
		}, []string{"route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "api_request_duration_seconds",
			Help: "Time to answer a request of the query API, by route pattern.",
			// Look-ups take milliseconds; a listing up to the request timeout.
			Buckets: []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
		}, []string{"route"}),
		rateLimited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "api_rate_limited_total",
			Help: "Requests refused by the per-client rate limit (api.rate_limit), by route pattern.",
		}, []string{"route"}),
		etherscan: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "api_etherscan_requests_total",
			Help: "Etherscan-compatible requests by module and action (\"other\" for ones not served).",
		}, []string{"module", "action"}),
		watermark: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "api_watermark_height",
			Help: "The highest height the API serves per chain: the watermark it last read.",
		}, []string{"chain_id"}),
		streamsOpen: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "api_streams_open",
			Help: "Change streams being served (SSE and websocket).",
		}, open),
		streamEvents: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "api_stream_events_sent_total",
			Help: "Change-stream events sent to consumers, by chain.",
		}, []string{"chain_id"}),
		streamsEnded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "api_streams_ended_total",
			Help: "Change streams ended, by chain and reason: closed (by the consumer), slow_consumer (a page not taken within api.stream_write_timeout), shutdown, error.",
		}, []string{"chain_id", "reason"}),
	}
	reg.MustRegister(m.requests, m.duration, m.rateLimited, m.etherscan, m.watermark, m.streamsOpen, m.streamEvents, m.streamsEnded)
	return m
}
