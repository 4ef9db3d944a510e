package webhook

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	tltemporal "github.com/tideline-dev/tideline/pkg/temporal"
)

// The workflow's activities (activity.go): DeliverWebhook on the admin
// queue, NoteWebhookDeadLetter (local), both called by name. No history
// recorded before this workflow type to replay.

// DeadLetter is the state of a delivery that failed for
// webhooks.dead_letter_after without delivering anything: its workflow's
// own (Progress.State, memo StateMemo), never stored; it waits for resume.
// Its other states are the subscription's (Active, Paused, Removed).
const DeadLetter = "dead_letter"

// Input is the input of a WebhookDelivery workflow: the chain and the
// subscription, never its URL or secret, and where it stands (what
// ContinueAsNew carries over; a first run has the subscription's start).
type Input struct {
	ChainID        string   `json:"chain_id"`
	SubscriptionID string   `json:"subscription_id"`
	Progress       Progress `json:"progress"`
}

// Progress is where a delivery stands: its progress query's answer and
// its result.
type Progress struct {
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

// DeliverInput is the input of one DeliverWebhook activity (and of
// NoteWebhookDeadLetter).
type DeliverInput struct {
	ChainID        string `json:"chain_id"`
	SubscriptionID string `json:"subscription_id"`
	Cursor         uint64 `json:"cursor"`
}

// DeliverResult is what one DeliverWebhook activity did.
type DeliverResult struct {
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

// Workflow (type WebhookDelivery) delivers one subscription's events, in order, at least
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
func (j *Job) Workflow(ctx workflow.Context, in Input) (Progress, error) {
	d := &delivery{j: j, in: in, p: in.Progress, limit: j.Settings.RunsPerHistory}
	if d.p.State == "" {
		d.p.State = Active
	}
	if d.limit <= 0 {
		d.limit = RunsPerHistory
	}
	if err := workflow.SetQueryHandler(ctx, ProgressQuery, func() (Progress, error) {
		return d.p, nil
	}); err != nil {
		return d.p, err
	}
	d.control = workflow.GetSignalChannel(ctx, ControlSignal)
	d.details(ctx)
	return d.run(ctx)
}

// delivery is one run of WebhookDelivery.
type delivery struct {
	j       *Job
	in      Input
	p       Progress
	control workflow.ReceiveChannel
	runs    int
	limit   int
}

func (d *delivery) run(ctx workflow.Context) (Progress, error) {
	for {
		d.takeSignals(ctx)
		switch d.p.State {
		case Removed:
			return d.p, nil
		case Paused, DeadLetter:
			var sig string
			d.control.Receive(ctx, &sig)
			d.apply(ctx, sig)
			continue
		}
		if d.runs >= d.limit || workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			d.takeSignals(ctx)
			if d.p.State == Active {
				return d.p, workflow.NewContinueAsNewError(ctx, tltemporal.WebhookWorkflow, Input{
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
	actx = workflow.WithActivityOptions(actx, activityOptions(d.j.Options, d.j.Settings.Webhooks))
	f := workflow.ExecuteActivity(actx, DeliverActivity, DeliverInput{
		ChainID: d.in.ChainID, SubscriptionID: d.in.SubscriptionID, Cursor: d.p.Cursor,
	})
	var (
		res  DeliverResult
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
		if d.p.State != Active {
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
	case errors.As(err, &canceled) || d.p.State != Active:
		// A signal took the delivery off; it said what the state is. A
		// cancelled activity reports what it delivered before it
		// stopped (stopped, activity.go): keep its cursor.
		var done DeliverResult
		if canceled != nil && canceled.HasDetails() && canceled.Details(&done) == nil {
			done.State = ""
			d.took(ctx, done)
		}
	default:
		d.p.Failures++
		d.p.DeadLetters++
		d.p.LastError = err.Error()
		d.setState(ctx, DeadLetter)
		lctx := workflow.WithLocalActivityOptions(ctx, d.j.Options.LocalActivity())
		// Only a metric and a log line: its failure changes nothing.
		_ = workflow.ExecuteLocalActivity(lctx, NoteActivity, DeliverInput{
			ChainID: d.in.ChainID, SubscriptionID: d.in.SubscriptionID, Cursor: d.p.Cursor,
		}).Get(lctx, nil)
	}
	return nil
}

// took takes in what a delivery activity reports.
func (d *delivery) took(ctx workflow.Context, res DeliverResult) {
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
	case Paused, Removed:
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
	case SignalPause:
		if d.p.State != Removed {
			d.setState(ctx, Paused)
		}
	case SignalResume:
		if d.p.State != Removed {
			d.setState(ctx, Active)
		}
	case SignalRemove:
		d.setState(ctx, Removed)
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
	if err := workflow.UpsertMemo(ctx, map[string]any{StateMemo: state}); err != nil {
		workflow.GetLogger(ctx).Warn("webhook delivery: memo not updated", "error", err)
	}
	d.details(ctx)
}

func (d *delivery) details(ctx workflow.Context) {
	s := fmt.Sprintf("**%s**: cursor %d, %d delivered, %d skipped, %d failures",
		d.p.State, d.p.Cursor, d.p.Delivered, d.p.Skipped, d.p.Failures)
	if d.p.State == DeadLetter {
		s += fmt.Sprintf("; dead-lettered (%s); `indexer subscription resume %s` delivers again from the cursor",
			d.p.LastError, d.in.SubscriptionID)
	}
	workflow.SetCurrentDetails(ctx, s)
}
