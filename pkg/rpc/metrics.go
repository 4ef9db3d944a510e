package rpc

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Error kinds of rpc_errors_total.
const (
	KindTransient = "transient"
	KindMalformed = "malformed"
	KindNotFound  = "not_found"
	KindOther     = "other"
)

// Metrics are the RPC adapters' Prometheus series. Labels carry the endpoint
// name only: URLs often embed API keys and must not reach a dashboard.
// A nil *Metrics records nothing.
type Metrics struct {
	requests *prometheus.CounterVec
	errors   *prometheus.CounterVec
	duration *prometheus.HistogramVec
	healthy  *prometheus.GaugeVec
	wrong    *prometheus.GaugeVec
	traces   *prometheus.GaugeVec
	kept     *prometheus.CounterVec
}

// NewMetrics creates the series and registers them with reg (nil: not
// registered, useful in tests). Registering twice on one registry panics,
// as with any Prometheus collector: create one Metrics per process.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rpc_requests_total",
			Help: "JSON-RPC requests sent, one per call and per batch element, retries included.",
		}, []string{"chain_id", "endpoint", "method"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rpc_errors_total",
			Help: "Failed JSON-RPC attempts and rejected answers by kind (transient, malformed, not_found, wrong_chain, other).",
		}, []string{"chain_id", "endpoint", "method", "kind"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "rpc_request_duration_seconds",
			Help:    "Duration of one JSON-RPC round trip (a batch counts once).",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"chain_id", "endpoint", "method"}),
		healthy: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "rpc_endpoint_healthy",
			Help: "Multi-endpoint clients: 1 if the endpoint's last outcome was good, 0 after a transport failure until it answers again.",
		}, []string{"chain_id", "endpoint"}),
		wrong: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "rpc_endpoint_wrong_chain",
			Help: "1 if the endpoint's last eth_chainId answer was not the chain's expected_chain_id (it is not used), 0 if it was.",
		}, []string{"chain_id", "endpoint"}),
		traces: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "rpc_endpoint_traces",
			Help: "Chains with tracing on: 1 if the endpoint answers its tracer, 0 if it said it lacks the method (it is skipped for traces).",
		}, []string{"chain_id", "endpoint"}),
		kept: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rpc_answers_incomplete_total",
			Help: "Parts of answers kept although incomplete or unknown (an older client's shape, a transaction type without columns), by reason: the height is indexed with what the answer had.",
		}, []string{"chain_id", "endpoint", "method", "reason"}),
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.errors, m.duration, m.healthy, m.wrong, m.traces, m.kept)
	}
	return m
}

func (m *Metrics) request(chainID, endpoint, method string, n int, d time.Duration) {
	if m == nil {
		return
	}
	m.requests.WithLabelValues(chainID, endpoint, method).Add(float64(n))
	m.duration.WithLabelValues(chainID, endpoint, method).Observe(d.Seconds())
}

func (m *Metrics) failure(chainID, endpoint, method, kind string) {
	if m == nil {
		return
	}
	m.errors.WithLabelValues(chainID, endpoint, method, kind).Inc()
}

func (m *Metrics) incomplete(chainID, endpoint, method, reason string, n int) {
	if m != nil {
		m.kept.WithLabelValues(chainID, endpoint, method, reason).Add(float64(n))
	}
}

func (m *Metrics) endpointHealthy(chainID, endpoint string, ok bool) {
	if m != nil {
		setFlag(m.healthy, chainID, endpoint, ok)
	}
}

func (m *Metrics) wrongChain(chainID, endpoint string, wrong bool) {
	if m != nil {
		setFlag(m.wrong, chainID, endpoint, wrong)
	}
}

// setFlag sets an endpoint's 0/1 gauge.
func setFlag(g *prometheus.GaugeVec, chainID, endpoint string, on bool) {
	v := 0.0
	if on {
		v = 1
	}
	g.WithLabelValues(chainID, endpoint).Set(v)
}

func (m *Metrics) endpointTraces(chainID, endpoint string, ok bool) {
	if m != nil {
		setFlag(m.traces, chainID, endpoint, ok)
	}
}

// errorKind maps a returned error to its rpc_errors_total kind.
func errorKind(err error) string {
	var mal *MalformedError
	var tr *TransientError
	var wc *WrongChainError
	switch {
	case errors.As(err, &mal):
		return KindMalformed
	case errors.As(err, &wc):
		return KindWrongChain
	case errors.Is(err, ErrBlockNotFound):
		return KindNotFound
	case errors.As(err, &tr):
		return KindTransient
	default:
		return KindOther
	}
}
