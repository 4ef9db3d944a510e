package workflow

import (
	"errors"
	"fmt"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/tideline-dev/tideline/pkg/indexer/types"
	tltemporal "github.com/tideline-dev/tideline/pkg/temporal"
)

// WebhookDelivery's activities (pkg/indexer/activity/webhook.go):
// DeliverWebhook on the admin queue, NoteWebhookDeadLetter (local). A new
// workflow type: no history recorded before it to replay.

// WebhookRunsPerHistory is how many delivery activities one run of the
// workflow makes before it continues as new (about six history events
// each, one a minute while idle): the cursor and the counts carry over.
const WebhookRunsPerHistory = 500

// WebhookDelivery delivers one subscription's events, in order, at least
// once: each DeliverWebhook activity POSTs from the cursor on and reports
// where it got; the cursor moves only past what a receiver accepted (or
// the filter left out). An activity that keeps failing for
// webhooks.dead_letter_after without delivering anything fails for good:
// the workflow goes dead_letter (memo webhook_state, its progress query,
// its current details in the Web UI) and waits, with no timer, for the
// resume signal; nothing is skipped. The control signal (pause, resume,
// remove, from `indexer subscription`) cancels a running delivery when
// the state changes; the stored state, which every activity reads first,
// is followed too. It ends when its subscription is removed, with its
// progress as result.
func (w *Workflows) WebhookDelivery(ctx workflow.Context, in types.WebhookInput) (types.WebhookProgress, error) {
	d := &delivery{w: w, in: in, p: in.Progress, limit: w.Chain.Settings.WebhookRunsPerHistory}
	if d.p.State == "" {
		d.p.State = types.WebhookActive
	}
	if d.limit <= 0 {
		d.limit = WebhookRunsPerHistory
	}
	if err := workflow.SetQueryHandler(ctx, tltemporal.WebhookProgressQuery, func() (types.WebhookProgress, error) {
		return d.p, nil
	}); err != nil {
		return d.p, err
	}
	d.control = workflow.GetSignalChannel(ctx, tltemporal.WebhookControlSignal)
	d.details(ctx)
	return d.run(ctx)
}

// delivery is one run of WebhookDelivery.
type delivery struct {
	w       *Workflows
	in      types.WebhookInput
	p       types.WebhookProgress
	control workflow.ReceiveChannel
	runs    int
	limit   int
}

func (d *delivery) run(ctx workflow.Context) (types.WebhookProgress, error) {
	for {
		d.takeSignals(ctx)
		switch d.p.State {
		case types.WebhookRemoved:
			return d.p, nil
		case types.WebhookPaused, types.WebhookDeadLetter:
			var sig string
			d.control.Receive(ctx, &sig)
			d.apply(ctx, sig)
			continue
		}
		if d.runs >= d.limit || workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			d.takeSignals(ctx)
			if d.p.State == types.WebhookActive {
				return d.p, workflow.NewContinueAsNewError(ctx, tltemporal.WebhookWorkflow, types.WebhookInput{
					ChainID: d.in.ChainID, SubscriptionID: d.in.SubscriptionID, Progress: d.p,
				})
			}
			continue
		}
		d.runs++
		if err := d.deliver(ctx); err != nil {
			return d.p, err
		}
	}
}

// deliver runs one DeliverWebhook activity, cancelled if a signal changes
// the state meanwhile, and takes in what it reports.
func (d *delivery) deliver(ctx workflow.Context) error {
	actx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	actx = workflow.WithActivityOptions(actx, d.w.Chain.Options.WebhookActivity(d.w.Chain.Settings.Webhooks))
	f := workflow.ExecuteActivity(actx, a.DeliverWebhook, types.WebhookDeliverInput{
		ChainID: d.in.ChainID, SubscriptionID: d.in.SubscriptionID, Cursor: d.p.Cursor,
	})
	var (
		res  types.WebhookDeliverResult
		err  error
		done bool
	)
	sel := workflow.NewSelector(ctx)
	sel.AddFuture(f, func(f workflow.Future) {
		err = f.Get(ctx, &res)
		done = true
	})
	sel.AddReceive(d.control, func(c workflow.ReceiveChannel, _ bool) {
		var sig string
		c.Receive(ctx, &sig)
		d.apply(ctx, sig)
		if d.p.State != types.WebhookActive {
			cancel()
		}
	})
	for !done {
		sel.Select(ctx)
	}
	var canceled *temporal.CanceledError
	switch {
	case err == nil:
		d.took(ctx, res)
	case errors.As(err, &canceled) || d.p.State != types.WebhookActive:
		// A signal took the delivery off; it said what the state is. A
		// cancelled activity reports what it delivered before it
		// stopped (activity.stopped): keep its cursor.
		var done types.WebhookDeliverResult
		if canceled != nil && canceled.HasDetails() && canceled.Details(&done) == nil {
			done.State = ""
			d.took(ctx, done)
		}
	default:
		d.p.Failures++
		d.p.DeadLetters++
		d.p.LastError = err.Error()
		d.setState(ctx, types.WebhookDeadLetter)
		lctx := workflow.WithLocalActivityOptions(ctx, d.w.Chain.Options.LocalActivity())
		// Only a metric and a log line: its failure changes nothing.
		_ = workflow.ExecuteLocalActivity(lctx, a.NoteWebhookDeadLetter, types.WebhookDeliverInput{
			ChainID: d.in.ChainID, SubscriptionID: d.in.SubscriptionID, Cursor: d.p.Cursor,
		}).Get(lctx, nil)
	}
	return nil
}

// took takes in what a delivery activity reports.
func (d *delivery) took(ctx workflow.Context, res types.WebhookDeliverResult) {
	d.p.Cursor = max(d.p.Cursor, res.Cursor)
	d.p.Delivered += res.Delivered
	d.p.Skipped += res.Skipped
	if !res.LastDelivery.IsZero() {
		d.p.LastDelivery = res.LastDelivery
	}
	if res.Failed != "" {
		d.p.Failures++
		d.p.LastError = res.Failed
	}
	switch res.State {
	case types.WebhookPaused, types.WebhookRemoved:
		d.setState(ctx, res.State)
	default:
		d.details(ctx)
	}
}

// takeSignals applies the signals that came meanwhile, in order.
func (d *delivery) takeSignals(ctx workflow.Context) {
	var sig string
	for d.control.ReceiveAsync(&sig) {
		d.apply(ctx, sig)
	}
}

// apply is one control signal. Resume clears a dead letter; pause holds
// even a dead-lettered subscription; remove ends the workflow.
func (d *delivery) apply(ctx workflow.Context, sig string) {
	switch sig {
	case tltemporal.WebhookPause:
		if d.p.State != types.WebhookRemoved {
			d.setState(ctx, types.WebhookPaused)
		}
	case tltemporal.WebhookResume:
		if d.p.State != types.WebhookRemoved {
			d.setState(ctx, types.WebhookActive)
		}
	case tltemporal.WebhookRemove:
		d.setState(ctx, types.WebhookRemoved)
	default:
		workflow.GetLogger(ctx).Warn("webhook delivery: unknown control signal ignored", "signal", sig)
	}
}

// setState records a new state where the Web UI shows it: the memo and
// the current details.
func (d *delivery) setState(ctx workflow.Context, state string) {
	if state == d.p.State {
		return
	}
	d.p.State = state
	if err := workflow.UpsertMemo(ctx, map[string]any{tltemporal.WebhookStateMemo: state}); err != nil {
		workflow.GetLogger(ctx).Warn("webhook delivery: memo not updated", "error", err)
	}
	d.details(ctx)
}

func (d *delivery) details(ctx workflow.Context) {
	s := fmt.Sprintf("**%s**: cursor %d, %d delivered, %d skipped, %d failures",
		d.p.State, d.p.Cursor, d.p.Delivered, d.p.Skipped, d.p.Failures)
	if d.p.State == types.WebhookDeadLetter {
		s += fmt.Sprintf("; dead-lettered (%s); `indexer subscription resume %s` delivers again from the cursor",
			d.p.LastError, d.in.SubscriptionID)
	}
	workflow.SetCurrentDetails(ctx, s)
}
