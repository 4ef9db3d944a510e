package config

import (
	"fmt"
	"time"
)

// Webhooks configures the delivery of the change stream to webhook
// subscriptions (`indexer subscription add`; pkg/webhook and the
// WebhookDelivery workflow). Process-wide: every chain's subscriptions
// are delivered with it.
type Webhooks struct {
	// DeadLetterAfter is how long one delivery may keep failing without
	// any event delivered before the subscription's workflow stops trying
	// and waits, dead-lettered, for `indexer subscription resume`.
	DeadLetterAfter time.Duration `mapstructure:"dead_letter_after"`
	// RequestTimeout bounds one POST to a receiver.
	RequestTimeout time.Duration `mapstructure:"request_timeout"`
	// PollInterval is how often a subscription that has delivered
	// everything looks for new events.
	PollInterval time.Duration `mapstructure:"poll_interval"`
	// PageSize is how many events are read from the stream at once.
	PageSize int `mapstructure:"page_size"`
	// Retry is the backoff between failed attempts (its maximum_attempts
	// must stay 0: the bound is DeadLetterAfter, nothing is skipped).
	Retry RetryPolicy `mapstructure:"retry"`
}

// DefaultWebhooks is the webhooks section's defaults.
func DefaultWebhooks() Webhooks {
	return Webhooks{
		DeadLetterAfter: 24 * time.Hour,
		RequestTimeout:  10 * time.Second,
		PollInterval:    time.Second,
		PageSize:        100,
		Retry:           RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute},
	}
}

// WithDefaults fills the zero fields of a webhooks section built in code
// (tests, tools) with the defaults; a loaded configuration has them.
func (w Webhooks) WithDefaults() Webhooks {
	d := DefaultWebhooks()
	if w.DeadLetterAfter == 0 {
		w.DeadLetterAfter = d.DeadLetterAfter
	}
	if w.RequestTimeout == 0 {
		w.RequestTimeout = d.RequestTimeout
	}
	if w.PollInterval == 0 {
		w.PollInterval = d.PollInterval
	}
	if w.PageSize == 0 {
		w.PageSize = d.PageSize
	}
	if w.Retry == (RetryPolicy{}) {
		w.Retry = d.Retry
	}
	return w
}

// webhooksDefaults sets the section's defaults on viper.
func webhooksDefaults(set func(key string, value any)) {
	d := DefaultWebhooks()
	set("webhooks.dead_letter_after", d.DeadLetterAfter.String())
	set("webhooks.request_timeout", d.RequestTimeout.String())
	set("webhooks.poll_interval", d.PollInterval.String())
	set("webhooks.page_size", d.PageSize)
	set("webhooks.retry.initial_interval", d.Retry.InitialInterval.String())
	set("webhooks.retry.backoff_coefficient", d.Retry.BackoffCoefficient)
	set("webhooks.retry.maximum_interval", d.Retry.MaximumInterval.String())
	set("webhooks.retry.maximum_attempts", d.Retry.MaximumAttempts)
}

// validate checks the section (after WithDefaults).
func (w Webhooks) validate() []error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, &KeyError{Key: "webhooks." + key, Reason: fmt.Sprintf(format, args...)})
	}
	// A delivery runs a minute before it reports; the bound must leave it
	// room for a few attempts.
	if w.DeadLetterAfter < 5*time.Minute {
		bad("dead_letter_after", "must be at least 5m, got %v", w.DeadLetterAfter)
	}
	if w.RequestTimeout < 100*time.Millisecond || w.RequestTimeout > time.Minute {
		bad("request_timeout", "must be between 100ms and 1m, got %v", w.RequestTimeout)
	}
	if w.PollInterval < 100*time.Millisecond || w.PollInterval > 30*time.Second {
		bad("poll_interval", "must be between 100ms and 30s, got %v", w.PollInterval)
	}
	if w.PageSize < 1 || w.PageSize > 1000 {
		bad("page_size", "must be between 1 and 1000, got %d", w.PageSize)
	}
	r := w.Retry
	switch {
	case r.InitialInterval <= 0:
		bad("retry.initial_interval", "must be positive")
	case r.BackoffCoefficient < 1:
		bad("retry.backoff_coefficient", "must be at least 1")
	case r.MaximumInterval < r.InitialInterval:
		bad("retry.maximum_interval", "must be at least initial_interval (%v)", r.InitialInterval)
	case r.MaximumInterval > w.DeadLetterAfter:
		bad("retry.maximum_interval", "must be at most dead_letter_after (%v)", w.DeadLetterAfter)
	case r.MaximumAttempts != 0:
		bad("retry.maximum_attempts", "must be 0 (unlimited): a delivery is bounded by dead_letter_after, never skipped")
	}
	return errs
}
