package api

import "github.com/prometheus/client_golang/prometheus"

// metrics are the API's own series, on its own /metrics. Labels are route
// patterns, status codes, chain IDs, Etherscan module/action names from
// a fixed list and the ids of stored API keys: never a raw path, a hash,
// an address, a client address or a key.
type metrics struct {
	requests    *prometheus.CounterVec   // route, code
	duration    *prometheus.HistogramVec // route
	rateLimited *prometheus.CounterVec   // route
	etherscan   *prometheus.CounterVec   // module, action
	rpcCalls    *prometheus.CounterVec   // method, outcome (jsonrpc.go)
	watermark   *prometheus.GaugeVec     // chain_id
	// The change stream (stream*.go).
	streamsOpen  prometheus.GaugeFunc
	streamEvents *prometheus.CounterVec // chain_id
	streamsEnded *prometheus.CounterVec // chain_id, reason

	// API keys (keys.go, admit.go).
	keyRequests       *prometheus.CounterVec // key_id: a stored key's id, or "anonymous"
	keyRejections     *prometheus.CounterVec // reason, key_id (also "unknown")
	keysLoaded        *prometheus.GaugeVec   // state: active, revoked
	keysReloaded      prometheus.Gauge
	keyReloadFailures prometheus.Counter
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
		rpcCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "api_rpc_calls_total",
			Help: "JSON-RPC calls of the /v1/chains/{id}/rpc route (a batch counts each call), by method (\"other\" for ones not served) and outcome: ok, client_error (the call's fault, or a block not served), server_error (the database's).",
		}, []string{"method", "outcome"}),
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
	m.keyRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "api_key_requests_total",
		Help: "Requests let through, by API key id (\"anonymous\" for those without a key).",
	}, []string{"key_id"})
	m.keyRejections = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "api_key_rejections_total",
		Help: "Requests refused before any work, by reason (missing, unknown, revoked, rate_limited) and key id " +
			"(\"anonymous\" without a key, \"unknown\" for a key that is not stored).",
	}, []string{"reason", "key_id"})
	m.keysLoaded = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "api_keys_loaded",
		Help: "API keys of the last good read of api_keys, by state (active, revoked).",
	}, []string{"state"})
	m.keysReloaded = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "api_keys_last_reload_timestamp_seconds",
		Help: "When the API keys were last read successfully (Unix seconds); 0 before the first read.",
	})
	m.keyReloadFailures = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "api_keys_reload_failures_total",
		Help: "Failed reads of the API keys; the keys of the last good read stay in use.",
	})
	reg.MustRegister(m.requests, m.duration, m.rateLimited, m.etherscan, m.rpcCalls, m.watermark, m.streamsOpen, m.streamEvents, m.streamsEnded,
		m.keyRequests, m.keyRejections, m.keysLoaded, m.keysReloaded, m.keyReloadFailures)
	return m
}
