package webhook

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// How the subscription commands (pkg/indexer/lifecycle) and the workers
// reach a delivery: one WebhookDelivery workflow per subscription, on its
// chain's admin queue, with a fixed ID (temporal.WebhookID), so that
// however many starts meet (the command, every worker starting the
// chain) one runs. Its input carries the chain and subscription IDs and
// the cursor, never the URL or the secret: the activity reads them. The
// names below are in histories and in what operators type (`temporal
// workflow query --type progress`): they never change.

// ControlSignal carries a subscription's new state to its workflow
// (SignalPause, SignalResume, SignalRemove).
const ControlSignal = "control"

// What ControlSignal carries.
const (
	SignalPause  = "pause"
	SignalResume = "resume"
	SignalRemove = "remove"
)

// ProgressQuery is the query a delivery answers (Progress: cursor, state,
// counts, the last error).
const ProgressQuery = "progress"

// StateMemo is the memo key of the delivery's state (active, paused,
// dead_letter), updated when it changes: what the Web UI's list shows of a
// dead-lettered subscription.
const StateMemo = "webhook_state"

// StartOptions start a subscription's delivery, or find it running
// (conflict policy use-existing: a second start is no error and starts
// nothing). A delivery that ended (its subscription removed) may be
// started again.
func StartOptions(o temporal.Options, subscriptionID string) client.StartWorkflowOptions {
	so := o.AdminStart(temporal.WebhookID(o.ChainID, subscriptionID), string(types.IndexModeWebhook),
		fmt.Sprintf("webhook deliveries of subscription %s of chain %s", subscriptionID, o.ChainID))
	so.Memo[StateMemo] = Active
	return so
}

// Start starts the subscription's delivery with in unless it runs
// already.
func Start(ctx context.Context, c client.Client, o temporal.Options, in Input) error {
	if _, err := c.ExecuteWorkflow(ctx, StartOptions(o, in.SubscriptionID), temporal.WebhookWorkflow, in); err != nil {
		return fmt.Errorf("temporal: starting %s: %w", temporal.WebhookID(o.ChainID, in.SubscriptionID), err)
	}
	return nil
}

// Resume sends the resume signal to the subscription's delivery, starting
// it with in first if it does not run.
func Resume(ctx context.Context, c client.Client, o temporal.Options, in Input) error {
	so := StartOptions(o, in.SubscriptionID)
	if _, err := c.SignalWithStartWorkflow(ctx, so.ID, ControlSignal, SignalResume, so, temporal.WebhookWorkflow, in); err != nil {
		return fmt.Errorf("temporal: resuming %s: %w", so.ID, err)
	}
	return nil
}

// Signal sends signal (SignalPause, SignalRemove) to the subscription's
// delivery; running is false when none runs (nothing to tell).
func Signal(ctx context.Context, c client.Client, chainID, subscriptionID, signal string) (running bool, err error) {
	id := temporal.WebhookID(chainID, subscriptionID)
	err = c.SignalWorkflow(ctx, id, "", ControlSignal, signal)
	var notFound *serviceerror.NotFound
	switch {
	case errors.As(err, &notFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("temporal: signalling %s: %w", id, err)
	}
	return true, nil
}

// Query asks the subscription's delivery for its progress into out;
// running is false when none runs.
func Query(ctx context.Context, c client.Client, chainID, subscriptionID string, out *Progress) (running bool, err error) {
	id := temporal.WebhookID(chainID, subscriptionID)
	v, err := c.QueryWorkflow(ctx, id, "", ProgressQuery)
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
