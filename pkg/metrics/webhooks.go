package metrics

import "github.com/prometheus/client_golang/prometheus"

// Webhooks are the series of the webhook subscriptions' deliveries,
// labelled by chain and subscription ID: never by URL, which may hold a
// token.
type Webhooks struct {
	// WebhookDelivered counts events a receiver accepted (2xx).
	WebhookDelivered *prometheus.CounterVec
	// WebhookFailedAttempts counts POSTs that failed (no answer, or not
	// 2xx); each is retried.
	WebhookFailedAttempts *prometheus.CounterVec
	// WebhookDeadLettered counts deliveries given up after
	// webhooks.dead_letter_after: the subscription waits for resume.
	WebhookDeadLettered *prometheus.CounterVec
	// WebhookLag is the stream's last seq minus the subscription's
	// cursor, set by the worker delivering it.
	WebhookLag *prometheus.GaugeVec
}

func newWebhooks(reg prometheus.Registerer) Webhooks {
	labels := []string{"chain_id", "subscription"}
	w := Webhooks{
		WebhookDelivered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "indexer_webhook_delivered_total",
			Help: "Change-stream events a subscription's receiver accepted (2xx).",
		}, labels),
		WebhookFailedAttempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "indexer_webhook_failed_attempts_total",
			Help: "POSTs to a subscription's receiver that failed (no answer or not 2xx); each is retried with backoff.",
		}, labels),
		WebhookDeadLettered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "indexer_webhook_dead_lettered_total",
			Help: "Times a subscription's delivery failed for webhooks.dead_letter_after without delivering anything and went dead-letter (waits for indexer subscription resume).",
		}, labels),
		WebhookLag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "indexer_webhook_lag_events",
			Help: "Events of the chain's stream after a subscription's cursor (the stream's last seq minus the cursor), as last seen by the worker delivering it.",
		}, labels),
	}
	reg.MustRegister(w.WebhookDelivered, w.WebhookFailedAttempts, w.WebhookDeadLettered, w.WebhookLag)
	return w
}
