package temporal

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/workflow"

	"github.com/tideline-dev/tideline/pkg/config"
)

// Webhook deliveries: one WebhookDelivery workflow per subscription, on
// its chain's admin queue, with a fixed ID, so that however many starts
// meet (the command, every worker starting the chain) one runs. Its input
// carries the chain and subscription IDs and the cursor, never the URL or
// the secret: the activity reads them.

// WebhookWorkflow is the delivery's workflow type.
const WebhookWorkflow = "WebhookDelivery"

// WebhookControlSignal carries a subscription's new state to its workflow
// (WebhookPause, WebhookResume, WebhookRemove).
const WebhookControlSignal = "control"

// What WebhookControlSignal carries.
const (
	WebhookPause  = "pause"
	WebhookResume = "resume"
	WebhookRemove = "remove"
)

// WebhookProgressQuery is the query a delivery answers (cursor, state,
// counts, the last error).
const WebhookProgressQuery = "progress"

// WebhookStateMemo is the memo key of the delivery's state (active,
// paused, dead_letter), updated when it changes: what the Web UI's list
// shows of a dead-lettered subscription.
const WebhookStateMemo = "webhook_state"

// WebhookRunFor is how long one delivery activity delivers (or waits for
// new events) before it reports to its workflow.
const WebhookRunFor = time.Minute

// WebhookID is the workflow ID of a subscription's delivery.
func WebhookID(chainID, subscriptionID string) string {
	return chainID + ":webhook:" + subscriptionID
}

// WebhookStart starts a subscription's delivery, or finds it running
// (conflict policy use-existing: a second start is no error and starts
// nothing). A delivery that ended (its subscription removed) may be
// started again.
func (o Options) WebhookStart(subscriptionID, mode string) client.StartWorkflowOptions {
	v := o.describe(mode, nil, 0, fmt.Sprintf("webhook deliveries of subscription %s of chain %s", subscriptionID, o.ChainID))
	v.memo[WebhookStateMemo] = "active"
	return client.StartWorkflowOptions{
		ID:                       WebhookID(o.ChainID, subscriptionID),
		TaskQueue:                AdminQueue(o.ChainID),
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		TypedSearchAttributes:    v.attrs,
		Memo:                     v.memo,
		StaticSummary:            v.summary,
	}
}

// WebhookActivity is for the delivery activity on the admin queue. Its
// attempts are unlimited but bounded in time by webhooks.dead_letter_after
// (schedule-to-close): an activity that delivered something reports and
// the next starts afresh, so the bound is a time without any delivery.
// It heartbeats before every POST and every look for new events. A
// cancelled delivery (the subscription paused) is waited for, so that the
// next never overlaps it: two would POST out of order.
func (o Options) WebhookActivity(w config.Webhooks) workflow.ActivityOptions {
	return workflow.ActivityOptions{
		WaitForCancellation:    true,
		TaskQueue:              AdminQueue(o.ChainID),
		ScheduleToCloseTimeout: w.DeadLetterAfter,
		StartToCloseTimeout:    WebhookRunFor + 2*w.RequestTimeout + time.Minute,
		HeartbeatTimeout:       w.RequestTimeout + w.PollInterval + time.Minute,
		RetryPolicy:            RetryPolicy(w.Retry),
	}
}

// StartWebhook starts the subscription's delivery with input unless it
// runs already.
func StartWebhook(ctx context.Context, c client.Client, o Options, subscriptionID, mode string, input any) error {
	if _, err := c.ExecuteWorkflow(ctx, o.WebhookStart(subscriptionID, mode), WebhookWorkflow, input); err != nil {
		return fmt.Errorf("temporal: starting %s: %w", WebhookID(o.ChainID, subscriptionID), err)
	}
	return nil
}

// ResumeWebhook sends the resume signal to the subscription's delivery,
// starting it with input first if it does not run.
func ResumeWebhook(ctx context.Context, c client.Client, o Options, subscriptionID, mode string, input any) error {
	so := o.WebhookStart(subscriptionID, mode)
	if _, err := c.SignalWithStartWorkflow(ctx, so.ID, WebhookControlSignal, WebhookResume, so, WebhookWorkflow, input); err != nil {
		return fmt.Errorf("temporal: resuming %s: %w", so.ID, err)
	}
	return nil
}

// SignalWebhook sends signal (WebhookPause, WebhookRemove) to the
// subscription's delivery; running is false when none runs (nothing to
// tell).
func SignalWebhook(ctx context.Context, c client.Client, chainID, subscriptionID, signal string) (running bool, err error) {
	id := WebhookID(chainID, subscriptionID)
	err = c.SignalWorkflow(ctx, id, "", WebhookControlSignal, signal)
	var notFound *serviceerror.NotFound
	switch {
	case errors.As(err, &notFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("temporal: signalling %s: %w", id, err)
	}
	return true, nil
}

// QueryWebhook asks the subscription's delivery for its progress into
// out; running is false when none runs.
func QueryWebhook(ctx context.Context, c client.Client, chainID, subscriptionID string, out any) (running bool, err error) {
	id := WebhookID(chainID, subscriptionID)
	v, err := c.QueryWorkflow(ctx, id, "", WebhookProgressQuery)
	var notFound *serviceerror.NotFound
	switch {
	case errors.As(err, &notFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("temporal: asking %s for its progress: %w", id, err)
	}
	if err := v.Get(out); err != nil {
		return true, fmt.Errorf("temporal: reading the progress of %s: %w", id, err)
	}
	return true, nil
}
