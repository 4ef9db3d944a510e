// Package webhook is the webhook deliveries, a side job of every chain:
// one WebhookDelivery workflow per subscription to the chain's change
// stream, started by `indexer subscription add` and by each worker
// starting the chain (no Schedule: a delivery runs until its subscription
// is removed, continuing as new). The subscriptions' model, their filter,
// the signing and the sender, the workflow, its activities, their input,
// result and progress, their options, the commands' Temporal calls and the
// metrics are all here.
package webhook

import (
	"time"

	sdkactivity "go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/stream"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// The activities' names in histories (unchanged since they were methods
// of the indexer's Activities). NoteActivity is a local activity: its name
// is in the marker the workflow records.
const (
	DeliverActivity = "DeliverWebhook"
	NoteActivity    = "NoteWebhookDeadLetter"
)

// RunsPerHistory is how many delivery activities one run of the workflow
// makes before it continues as new (about six history events each, one a
// minute while idle): the cursor and the counts carry over.
const RunsPerHistory = 500

// RunFor is how long one delivery activity delivers (or waits for new
// events) before it reports to its workflow.
const RunFor = time.Minute

// Settings are what the deliveries read of the worker's config: the
// webhooks section, process-wide (every chain's subscriptions are
// delivered alike). They reach the workflow from the Job, never from its
// input, which carries no URL and no secret.
type Settings struct {
	// Webhooks is webhooks.* with its defaults: dead_letter_after (the
	// bound of the retries), request_timeout, poll_interval, page_size,
	// retry.
	Webhooks config.Webhooks
	// RunsPerHistory is how many deliveries one run makes before it
	// continues as new (0: RunsPerHistory).
	RunsPerHistory int
}

// Job is one chain's webhook deliveries.
type Job struct {
	ChainID  string
	Settings Settings
	Options  temporal.Options
	// Subscriptions reads the stored subscriptions
	// (*storage.RecordReader), Stream the chain's change stream
	// (*storage.StreamReader).
	Subscriptions Subscriptions
	Stream        stream.Source
	// Sender POSTs the events (one per process).
	Sender *Sender
	// LookupEnv reads a subscription's secret (os.LookupEnv).
	LookupEnv func(string) (string, bool)
	Metrics   *Metrics
	Log       *zap.Logger
}

// Register registers the job's workflow and activities, under the names
// histories know them by.
func (j *Job) Register(r worker.Registry) {
	r.RegisterWorkflowWithOptions(j.Workflow, workflow.RegisterOptions{Name: temporal.WebhookWorkflow})
	r.RegisterActivityWithOptions(j.DeliverWebhook, sdkactivity.RegisterOptions{Name: DeliverActivity})
	r.RegisterActivityWithOptions(j.NoteWebhookDeadLetter, sdkactivity.RegisterOptions{Name: NoteActivity})
}

// activityOptions are for the delivery activity on the admin queue. Its
// attempts are unlimited but bounded in time by webhooks.dead_letter_after
// (schedule-to-close): an activity that delivered something reports and
// the next starts afresh, so the bound is a time without any delivery.
// It heartbeats before every POST and every look for new events. A
// cancelled delivery (the subscription paused) is waited for, so that the
// next never overlaps it: two would POST out of order.
func activityOptions(o temporal.Options, w config.Webhooks) workflow.ActivityOptions {
	return workflow.ActivityOptions{
		WaitForCancellation:    true,
		TaskQueue:              temporal.AdminQueue(o.ChainID),
		ScheduleToCloseTimeout: w.DeadLetterAfter,
		StartToCloseTimeout:    RunFor + 2*w.RequestTimeout + time.Minute,
		HeartbeatTimeout:       w.RequestTimeout + w.PollInterval + time.Minute,
		RetryPolicy:            temporal.RetryPolicy(w.Retry),
	}
}

// logger is the job's logger with the chain named.
func (j *Job) logger() *zap.Logger { return j.Log.With(zap.String("chain_id", j.ChainID)) }
