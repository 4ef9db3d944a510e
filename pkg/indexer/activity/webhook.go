package activity

import (
	"context"
	"time"

	"go.temporal.io/sdk/activity"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/indexer/webhook"
	"github.com/tideline-dev/tideline/pkg/storage"
	"github.com/tideline-dev/tideline/pkg/stream"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// Webhooks is what the webhook deliveries need, set by the worker (nil in
// a process that delivers none).
type Webhooks struct {
	Subscriptions SubscriptionReader
	Stream        stream.Source
	Sender        *webhook.Sender
	Settings      config.Webhooks
	// LookupEnv reads a subscription's secret (os.LookupEnv).
	LookupEnv func(string) (string, bool)
}

// SubscriptionReader reads a stored subscription (*storage.Reader).
type SubscriptionReader interface {
	Subscription(ctx context.Context, chainID, id string) (storage.SubscriptionRecord, bool, error)
}

// DeliverWebhook delivers the subscription's events after the cursor, in
// order, one POST each, for temporal.WebhookRunFor, waiting for new ones
// once it has delivered everything; an event the filter leaves out only
// moves the cursor. It heartbeats the cursor before each POST, so an
// attempt after a dead worker goes on from there. A POST that fails
// fails the attempt (Temporal retries it with backoff, until
// webhooks.dead_letter_after) unless this activity had made progress:
// then it reports the progress with the failure, and the workflow starts
// the next at once. The URL and the secret are read here, from the
// database and the environment, and never leave this function.
func (a *Activities) DeliverWebhook(ctx context.Context, in types.WebhookDeliverInput) (types.WebhookDeliverResult, error) {
	w := a.Webhooks
	res := types.WebhookDeliverResult{Cursor: in.Cursor}
	if activity.HasHeartbeatDetails(ctx) {
		var hb uint64
		if activity.GetHeartbeatDetails(ctx, &hb) == nil && hb > res.Cursor {
			res.Cursor = hb
		}
	}
	id := a.Chain.ID
	rec, found, err := w.Subscriptions.Subscription(ctx, id, in.SubscriptionID)
	switch {
	case err != nil:
		return res, err
	case !found || rec.State == webhook.Removed:
		res.State = types.WebhookRemoved
		return res, nil
	case rec.State == webhook.Paused:
		res.State = types.WebhookPaused
		return res, nil
	}
	sub, err := webhook.FromRecord(rec)
	if err != nil {
		return res, err
	}
	secret, err := sub.Secret(w.LookupEnv)
	if err != nil {
		return res, err
	}
	log := a.logger().With(zap.String("subscription", sub.ID))
	delivered := a.Metrics.WebhookDelivered.WithLabelValues(id, sub.ID)
	failed := a.Metrics.WebhookFailedAttempts.WithLabelValues(id, sub.ID)
	reads := sub.Filter.Reads(sub.Include)
	start := res.Cursor
	deadline := time.Now().Add(temporal.WebhookRunFor)
	for {
		events, err := stream.ReadEvents(ctx, w.Stream, id, res.Cursor, w.Settings.PageSize, reads)
		if err != nil {
			if ctx.Err() != nil {
				return res, stopped(res)
			}
			return a.webhookFailed(res, start, err)
		}
		a.noteWebhookLag(ctx, sub.ID, res.Cursor, len(events) == 0)
		for _, e := range events {
			out, ok := sub.Filter.Apply(e, sub.Include)
			if !ok {
				res.Cursor = e.Seq
				res.Skipped++
				continue
			}
			activity.RecordHeartbeat(ctx, res.Cursor)
			// A POST under way is not cut short by a cancellation (a pause,
			// a removal): the receiver may take it, and then the cursor
			// must say so. The sender's own timeout bounds it.
			err := w.Sender.Send(context.WithoutCancel(ctx),
				webhook.Delivery{URL: sub.URL, Secret: secret, SubscriptionID: sub.ID, Event: out, Now: time.Now()})
			if err != nil {
				if ctx.Err() != nil {
					return res, stopped(res)
				}
				failed.Inc()
				log.Warn("webhook delivery failed", zap.Uint64("seq", e.Seq), zap.Error(err))
				return a.webhookFailed(res, start, err)
			}
			delivered.Inc()
			res.Cursor = e.Seq
			res.Delivered++
			res.LastDelivery = time.Now().UTC()
			if ctx.Err() != nil {
				return res, stopped(res)
			}
		}
		activity.RecordHeartbeat(ctx, res.Cursor)
		if !time.Now().Before(deadline) {
			return res, nil
		}
		if len(events) > 0 {
			continue
		}
		t := time.NewTimer(w.Settings.PollInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return res, stopped(res)
		case <-t.C:
		}
	}
}

// stopped ends a cancelled delivery with what it delivered as the
// cancellation's details: the workflow takes its cursor in, so a pause
// does not send again what the receiver has.
func stopped(res types.WebhookDeliverResult) error { return sdktemporal.NewCanceledError(res) }

// webhookFailed is the end of an activity whose delivery failed: the
// failure, or (progress made) the progress with the failure.
func (a *Activities) webhookFailed(res types.WebhookDeliverResult, start uint64, err error) (types.WebhookDeliverResult, error) {
	if res.Cursor == start {
		return res, err
	}
	res.Failed = err.Error()
	return res, nil
}

// noteWebhookLag sets how far the subscription is behind the stream. No
// event after the cursor means none behind: the stream's tail is read
// only when there are, so an idle subscription's look every
// poll_interval costs one read, not two.
func (a *Activities) noteWebhookLag(ctx context.Context, subscriptionID string, cursor uint64, caughtUp bool) {
	gauge := a.Metrics.WebhookLag.WithLabelValues(a.Chain.ID, subscriptionID)
	if caughtUp {
		gauge.Set(0)
		return
	}
	tail, err := a.Webhooks.Stream.StreamTail(ctx, a.Chain.ID, 1)
	if err != nil || len(tail) == 0 {
		return
	}
	lag := float64(0)
	if tail[0].Seq > cursor {
		lag = float64(tail[0].Seq - cursor)
	}
	gauge.Set(lag)
}

// NoteWebhookDeadLetter counts and logs a subscription gone dead-letter.
func (a *Activities) NoteWebhookDeadLetter(ctx context.Context, in types.WebhookDeliverInput) error {
	a.Metrics.WebhookDeadLettered.WithLabelValues(a.Chain.ID, in.SubscriptionID).Inc()
	a.logger().Error("webhook subscription dead-lettered: nothing delivered for webhooks.dead_letter_after; "+
		"it waits for indexer subscription resume", zap.String("subscription", in.SubscriptionID), zap.Uint64("cursor", in.Cursor))
	return nil
}
