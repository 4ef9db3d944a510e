package webhook

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the series of the webhook deliveries, one set per process,
// labelled by chain and subscription ID: never by URL, which may hold a
// token.
type Metrics struct {
	// Delivered counts events a receiver accepted (2xx).
	Delivered *prometheus.CounterVec
	// FailedAttempts counts POSTs that failed (no answer, or not 2xx);
	// each is retried.
	FailedAttempts *prometheus.CounterVec
	// DeadLettered counts deliveries given up after
	// webhooks.dead_letter_after: the subscription waits for resume.
	DeadLettered *prometheus.CounterVec
	// Lag is the stream's last seq minus the subscription's cursor, set
	// by the worker delivering it.
	Lag *prometheus.GaugeVec
}

// NewMetrics makes the deliveries' series and registers them on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	labels := []string{"chain_id", "subscription"}
	m := &Metrics{
		Delivered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "indexer_webhook_delivered_total",
			Help: "Change-stream events a subscription's receiver accepted (2xx).",
		}, labels),
		FailedAttempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "indexer_webhook_failed_attempts_total",
			Help: "POSTs to a subscription's receiver that failed (no answer or not 2xx); each is retried with backoff.",
		}, labels),
		DeadLettered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "indexer_webhook_dead_lettered_total",
			Help: "Times a subscription's delivery failed for webhooks.dead_letter_after without delivering anything and went dead-letter (waits for indexer subscription resume).",
		}, labels),
		Lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "indexer_webhook_lag_events",
			Help: "Events of the chain's stream after a subscription's cursor (the stream's last seq minus the cursor), as last seen by the worker delivering it.",
		}, labels),
	}
	reg.MustRegister(m.Delivered, m.FailedAttempts, m.DeadLettered, m.Lag)
	return m
}
