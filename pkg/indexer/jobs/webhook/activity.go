package webhook

import (
	"context"
	"time"

	"go.temporal.io/sdk/activity"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/stream"
)

// DeliverWebhook delivers the subscription's events after the cursor, in
// order, one POST each, for RunFor, waiting for new ones
// once it has delivered everything; an event the filter leaves out only
// moves the cursor. It heartbeats the cursor before each POST, so an
// attempt after a dead worker goes on from there. A POST that fails
// fails the attempt (Temporal retries it with backoff, until
// webhooks.dead_letter_after) unless this activity had made progress:
// then it reports the progress with the failure, and the workflow starts
// the next at once. The URL and the secret are read here, from the
// database and the environment, and never leave this function.
func (j *Job) DeliverWebhook(ctx context.Context, in DeliverInput) (DeliverResult, error) {
	w := j.Settings.Webhooks
	res := DeliverResult{Cursor: in.Cursor}
	if activity.HasHeartbeatDetails(ctx) {
		var hb uint64
		if activity.GetHeartbeatDetails(ctx, &hb) == nil && hb > res.Cursor {
			res.Cursor = hb
		}
	}
	id := j.ChainID
	rec, found, err := j.Subscriptions.Subscription(ctx, id, in.SubscriptionID)
	switch {
	case err != nil:
		return res, err
	case !found || rec.State == Removed:
		res.State = Removed
		return res, nil
	case rec.State == Paused:
		res.State = Paused
		return res, nil
	}
	sub, err := FromRecord(rec)
	if err != nil {
		return res, err
	}
	secret, err := sub.Secret(j.LookupEnv)
	if err != nil {
		return res, err
	}
	log := j.logger().With(zap.String("subscription", sub.ID))
	delivered := j.Metrics.Delivered.WithLabelValues(id, sub.ID)
	failed := j.Metrics.FailedAttempts.WithLabelValues(id, sub.ID)
	reads := sub.Filter.Reads(sub.Include)
	start := res.Cursor
	deadline := time.Now().Add(RunFor)
	for {
		events, err := stream.ReadEvents(ctx, j.Stream, id, res.Cursor, w.PageSize, reads)
		if err != nil {
			if ctx.Err() != nil {
				return res, stopped(res)
			}
			return failedAfter(res, start, err)
		}
		j.noteLag(ctx, sub.ID, res.Cursor, len(events) == 0)
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
			err := j.Sender.Send(context.WithoutCancel(ctx),
				Delivery{URL: sub.URL, Secret: secret, SubscriptionID: sub.ID, Event: out, Now: time.Now()})
			if err != nil {
				if ctx.Err() != nil {
					return res, stopped(res)
				}
				failed.Inc()
				log.Warn("webhook delivery failed", zap.Uint64("seq", e.Seq), zap.Error(err))
				return failedAfter(res, start, err)
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
		// Waits for new events, not for a failure to pass: a failure ends
		// the attempt above, and Temporal's policy (webhooks.retry) retries.
		t := time.NewTimer(w.PollInterval)
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
func stopped(res DeliverResult) error { return sdktemporal.NewCanceledError(res) }

// failedAfter is the end of an activity whose delivery failed: the
// failure, or (progress made) the progress with the failure.
func failedAfter(res DeliverResult, start uint64, err error) (DeliverResult, error) {
	if res.Cursor == start {
		return res, err
	}
	res.Failed = err.Error()
	return res, nil
}

// noteLag sets how far the subscription is behind the stream. No
// event after the cursor means none behind: the stream's tail is read
// only when there are, so an idle subscription's look every
// poll_interval costs one read, not two.
func (j *Job) noteLag(ctx context.Context, subscriptionID string, cursor uint64, caughtUp bool) {
	gauge := j.Metrics.Lag.WithLabelValues(j.ChainID, subscriptionID)
	if caughtUp {
		gauge.Set(0)
		return
	}
	tail, err := j.Stream.StreamTail(ctx, j.ChainID, 1)
	if err != nil || len(tail) == 0 {
		return
	}
	lag := float64(0)
	if tail[0].Seq > cursor {
		lag = float64(tail[0].Seq - cursor)
	}
	gauge.Set(lag)
}

// NoteWebhookDeadLetter counts and logs a subscription gone dead-letter
// (a local activity of the workflow).
func (j *Job) NoteWebhookDeadLetter(ctx context.Context, in DeliverInput) error {
	j.Metrics.DeadLettered.WithLabelValues(j.ChainID, in.SubscriptionID).Inc()
	j.logger().Error("webhook subscription dead-lettered: nothing delivered for webhooks.dead_letter_after; "+
		"it waits for indexer subscription resume", zap.String("subscription", in.SubscriptionID), zap.Uint64("cursor", in.Cursor))
	return nil
}
