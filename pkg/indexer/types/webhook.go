package types

import "time"

// IndexModeWebhook is the IndexMode search attribute of the webhook
// deliveries (they index nothing: they POST the change stream).
const IndexModeWebhook IndexMode = "webhook"

// The states of a webhook delivery (its progress, its memo).
const (
	WebhookActive     = "active"
	WebhookPaused     = "paused"
	WebhookDeadLetter = "dead_letter"
	WebhookRemoved    = "removed"
)

// WebhookInput is the input of a WebhookDelivery workflow: the chain and
// the subscription, never its URL or secret, and where it stands (what
// ContinueAsNew carries over; a first run has the subscription's start).
type WebhookInput struct {
	ChainID        string          `json:"chain_id"`
	SubscriptionID string          `json:"subscription_id"`
	Progress       WebhookProgress `json:"progress"`
}

// WebhookProgress is where a delivery stands: its progress query's
// answer and its result.
type WebhookProgress struct {
	// Cursor is the last seq delivered or skipped (filtered out): the
	// next delivery reads after it.
	Cursor uint64 `json:"cursor"`
	// State is active, paused, dead_letter or removed ("" reads as
	// active).
	State string `json:"state"`
	// Delivered and Skipped count events since the subscription began.
	Delivered uint64 `json:"delivered"`
	Skipped   uint64 `json:"skipped"`
	// LastDelivery is when a receiver last accepted an event.
	LastDelivery time.Time `json:"last_delivery,omitzero"`
	// Failures counts deliveries that ended on a failed POST: after some
	// progress (retried at once) or dead-lettered.
	Failures    uint64 `json:"failures"`
	DeadLetters uint64 `json:"dead_letters"`
	// LastError is the last failure's text (no URL in it).
	LastError string `json:"last_error,omitempty"`
}

// WebhookDeliverInput is the input of one DeliverWebhook activity.
type WebhookDeliverInput struct {
	ChainID        string `json:"chain_id"`
	SubscriptionID string `json:"subscription_id"`
	Cursor         uint64 `json:"cursor"`
}

// WebhookDeliverResult is what one DeliverWebhook activity did.
type WebhookDeliverResult struct {
	Cursor       uint64    `json:"cursor"`
	Delivered    uint64    `json:"delivered"`
	Skipped      uint64    `json:"skipped"`
	LastDelivery time.Time `json:"last_delivery,omitzero"`
	// State is the stored state when it is not active (paused, removed;
	// removed too for a subscription not stored): the workflow follows it.
	State string `json:"state,omitempty"`
	// Failed is the error of a POST that failed after this activity had
	// made progress: it reports the progress, and the workflow starts the
	// next at once (whose attempts back off).
	Failed string `json:"failed,omitempty"`
}
