package webhook_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/indexer/jobs/webhook"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// The WebhookDelivery workflow's logic, its activity standing in as a
// receiver that fails or accepts by attempt (the real activity against a
// real receiver is test/integration's TestWebhookDeliversEveryEventInOrder).

const (
	chainID = "test"
	subID   = "0123456789ab"
)

// t0 is the workflow start time of every test: fixed, so that the
// attempts' times are the backoff's.
var t0 = time.Date(2025, 10, 14, 0, 0, 0, 0, time.UTC)

// attempt is one DeliverWebhook attempt as the activity saw it.
type attempt struct {
	In      webhook.DeliverInput
	Attempt int32
	At      time.Time // the attempt's start, in workflow time
}

// receiver answers each DeliverWebhook attempt with answer.
type receiver struct {
	mu       sync.Mutex
	attempts []attempt
	notes    int
	answer   func(n int, a attempt) (webhook.DeliverResult, error)
	now      func() time.Time // the environment's clock
}

func (r *receiver) deliver(ctx context.Context, in webhook.DeliverInput) (webhook.DeliverResult, error) {
	info := activity.GetInfo(ctx)
	a := attempt{In: in, Attempt: info.Attempt, At: r.now()}
	r.mu.Lock()
	r.attempts = append(r.attempts, a)
	n := len(r.attempts)
	r.mu.Unlock()
	return r.answer(n, a)
}

func (r *receiver) all() []attempt {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]attempt(nil), r.attempts...)
}

var errRefused = errors.New("webhook: POST of seq 1: the receiver answered 503 Service Unavailable")

func webhookEnv(t *testing.T, r *receiver, runsPerHistory int) *testsuite.TestWorkflowEnvironment {
	t.Helper()
	w := config.DefaultWebhooks()
	w.DeadLetterAfter = 10 * time.Minute
	j := &webhook.Job{
		ChainID:  chainID,
		Options:  temporal.NewOptions(chainID, config.DefaultChain().Index.ActivityTimeout),
		Settings: webhook.Settings{Webhooks: w, RunsPerHistory: runsPerHistory},
	}
	var s testsuite.WorkflowTestSuite
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	env := s.NewTestWorkflowEnvironment()
	env.SetStartTime(t0)
	// Under the names the worker registers them by (Job.Register).
	env.RegisterWorkflowWithOptions(j.Workflow, workflow.RegisterOptions{Name: temporal.WebhookWorkflow})
	env.RegisterActivityWithOptions(j.DeliverWebhook, activity.RegisterOptions{Name: webhook.DeliverActivity})
	env.RegisterActivityWithOptions(j.NoteWebhookDeadLetter, activity.RegisterOptions{Name: webhook.NoteActivity})
	r.now = env.Now
	env.OnActivity(webhook.DeliverActivity, mock.Anything, mock.Anything).Return(r.deliver)
	env.OnActivity(webhook.NoteActivity, mock.Anything, mock.Anything).Return(func(context.Context, webhook.DeliverInput) error {
		r.mu.Lock()
		r.notes++
		r.mu.Unlock()
		return nil
	})
	env.SetTestTimeout(time.Minute)
	return env
}

func progress(t *testing.T, env *testsuite.TestWorkflowEnvironment) webhook.Progress {
	t.Helper()
	v, err := env.QueryWorkflow(webhook.ProgressQuery)
	require.NoError(t, err)
	var p webhook.Progress
	require.NoError(t, v.Get(&p))
	return p
}

func start(cursor uint64) webhook.Input {
	return webhook.Input{ChainID: chainID, SubscriptionID: subID, Progress: webhook.Progress{Cursor: cursor}}
}

// A receiver that refuses five times, then accepts: the attempts back
// off exponentially (1 s, 2 s, 4 s, 8 s, 16 s), the cursor moves only
// with the accepted delivery, and the workflow ends when the stored
// subscription says removed.
func TestWebhookRetriesWithBackoffThenDelivers(t *testing.T) {
	r := &receiver{answer: func(n int, a attempt) (webhook.DeliverResult, error) {
		switch {
		case n <= 5:
			return webhook.DeliverResult{}, errRefused
		case n == 6:
			return webhook.DeliverResult{Cursor: a.In.Cursor + 10, Delivered: 9, Skipped: 1, LastDelivery: t0}, nil
		}
		return webhook.DeliverResult{Cursor: a.In.Cursor, State: webhook.Removed}, nil
	}}
	env := webhookEnv(t, r, 0)
	env.ExecuteWorkflow(temporal.WebhookWorkflow, start(100))
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var res webhook.Progress
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, webhook.Progress{Cursor: 110, State: webhook.Removed, Delivered: 9, Skipped: 1, LastDelivery: t0}, res)

	got := r.all()
	require.Len(t, got, 7)
	for i, a := range got[:6] {
		require.Equal(t, int32(i+1), a.Attempt, "one activity, retried")
		require.Equal(t, uint64(100), a.In.Cursor, "the cursor does not move while the receiver refuses")
	}
	for i := 1; i < 6; i++ {
		require.Equal(t, time.Second<<(i-1), got[i].At.Sub(got[i-1].At), "backoff before attempt %d", i+1)
	}
	require.Equal(t, uint64(110), got[6].In.Cursor, "the next delivery starts after what was accepted")
	require.Equal(t, int32(1), got[6].Attempt)
}

// A receiver that never accepts: after webhooks.dead_letter_after (10 min
// here) the workflow goes dead_letter, says so (query, memo), runs
// nothing more and keeps its cursor until resumed; resumed, it delivers
// from the same cursor; removed, it ends.
func TestWebhookDeadLettersAfterTheBoundAndResumes(t *testing.T) {
	up, accepted := false, 0
	var mu sync.Mutex
	r := &receiver{answer: func(_ int, a attempt) (webhook.DeliverResult, error) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case !up:
			return webhook.DeliverResult{}, errRefused
		case accepted == 0:
			accepted++
			return webhook.DeliverResult{Cursor: a.In.Cursor + 5, Delivered: 5}, nil
		}
		return webhook.DeliverResult{Cursor: a.In.Cursor, State: webhook.Removed}, nil
	}}
	env := webhookEnv(t, r, 0)
	var dead, during webhook.Progress
	var attemptsAtDeath, attemptsBeforeResume int
	env.RegisterDelayedCallback(func() {
		dead = progress(t, env)
		attemptsAtDeath = len(r.all())
	}, 30*time.Minute)
	env.RegisterDelayedCallback(func() {
		during = progress(t, env)
		attemptsBeforeResume = len(r.all())
		mu.Lock()
		up = true
		mu.Unlock()
		env.SignalWorkflow(webhook.ControlSignal, webhook.SignalResume)
	}, 5*time.Hour)
	env.ExecuteWorkflow(temporal.WebhookWorkflow, start(41))
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())

	require.Equal(t, webhook.DeadLetter, dead.State)
	require.Equal(t, uint64(41), dead.Cursor, "nothing is skipped")
	require.Equal(t, uint64(1), dead.DeadLetters)
	require.Contains(t, dead.LastError, "503")
	require.Equal(t, 1, r.notes, "the dead letter is counted once")
	got := r.all()
	last := got[attemptsAtDeath-1]
	require.Less(t, last.At.Sub(t0), 10*time.Minute, "no attempt after the bound")
	require.Greater(t, attemptsAtDeath, 5, "retried until the bound")
	require.Equal(t, attemptsAtDeath, attemptsBeforeResume, "a dead letter runs nothing until resumed")
	require.Equal(t, dead, during)

	after := got[attemptsBeforeResume]
	require.Equal(t, uint64(41), after.In.Cursor, "resumed from the cursor")
	require.True(t, t0.Add(5*time.Hour).Equal(after.At), "resumed at %v", after.At)
	var res webhook.Progress
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, webhook.Removed, res.State)
	require.Equal(t, uint64(46), res.Cursor)
	require.Equal(t, uint64(5), res.Delivered)
}

// Progress then a failure: the progress is kept, the failure recorded,
// and the next delivery starts at once from the new cursor. The stored
// state paused (read by the activity) holds the workflow without an
// activity until resume; a pause signal cancels a delivery that is
// retrying and holds it too.
func TestWebhookKeepsProgressOfAFailedRunAndPauses(t *testing.T) {
	r := &receiver{answer: func(n int, a attempt) (webhook.DeliverResult, error) {
		switch n {
		case 1:
			return webhook.DeliverResult{Cursor: 13, Delivered: 3, Failed: errRefused.Error()}, nil
		case 2:
			return webhook.DeliverResult{Cursor: a.In.Cursor, State: webhook.Paused}, nil
		case 3:
			return webhook.DeliverResult{Cursor: a.In.Cursor + 1, Delivered: 1}, nil
		}
		return webhook.DeliverResult{}, errRefused // retried until the pause
	}}
	env := webhookEnv(t, r, 0)
	var paused, pausedAgain webhook.Progress
	var pausedAttempts, atPause, afterPause int
	env.RegisterDelayedCallback(func() {
		paused = progress(t, env)
		pausedAttempts = len(r.all())
		env.SignalWorkflow(webhook.ControlSignal, webhook.SignalResume)
	}, time.Hour)
	env.RegisterDelayedCallback(func() {
		atPause = len(r.all())
		env.SignalWorkflow(webhook.ControlSignal, webhook.SignalPause)
	}, time.Hour+time.Minute)
	env.RegisterDelayedCallback(func() {
		pausedAgain = progress(t, env)
		afterPause = len(r.all())
		env.SignalWorkflow(webhook.ControlSignal, webhook.SignalRemove)
	}, 2*time.Hour)
	env.ExecuteWorkflow(temporal.WebhookWorkflow, start(10))
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())

	got := r.all()
	require.Equal(t, uint64(13), got[1].In.Cursor)
	require.Equal(t, got[0].At, got[1].At, "the next delivery starts at once")
	require.Equal(t, webhook.Paused, paused.State)
	require.Equal(t, uint64(1), paused.Failures)
	require.Equal(t, errRefused.Error(), paused.LastError)
	require.Equal(t, 2, pausedAttempts, "paused: no activity")
	require.Greater(t, atPause, 4, "the fourth delivery was retrying")
	require.Equal(t, webhook.Paused, pausedAgain.State)
	require.Equal(t, uint64(14), pausedAgain.Cursor)
	require.Equal(t, atPause, afterPause, "the pause cancelled the retries")
	var res webhook.Progress
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, webhook.Removed, res.State)
	require.Equal(t, uint64(4), res.Delivered)
}

// ContinueAsNew after RunsPerHistory deliveries carries the cursor
// and the counts; the next run starts from them.
func TestWebhookContinueAsNewKeepsTheCursor(t *testing.T) {
	r := &receiver{answer: func(_ int, a attempt) (webhook.DeliverResult, error) {
		return webhook.DeliverResult{Cursor: a.In.Cursor + 10, Delivered: 10}, nil
	}}
	env := webhookEnv(t, r, 3)
	env.ExecuteWorkflow(temporal.WebhookWorkflow, start(5))
	require.True(t, env.IsWorkflowCompleted())
	var can *workflow.ContinueAsNewError
	require.True(t, errors.As(env.GetWorkflowError(), &can), "%v", env.GetWorkflowError())
	require.Equal(t, temporal.WebhookWorkflow, can.WorkflowType.Name)
	var next webhook.Input
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	require.Equal(t, webhook.Input{ChainID: chainID, SubscriptionID: subID,
		Progress: webhook.Progress{Cursor: 35, State: webhook.Active, Delivered: 30}}, next)
	require.Len(t, r.all(), 3)

	// The next run goes on from there.
	r2 := &receiver{answer: func(_ int, a attempt) (webhook.DeliverResult, error) {
		return webhook.DeliverResult{Cursor: a.In.Cursor, State: webhook.Removed}, nil
	}}
	env = webhookEnv(t, r2, 3)
	env.ExecuteWorkflow(temporal.WebhookWorkflow, next)
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, uint64(35), r2.all()[0].In.Cursor)
	var res webhook.Progress
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, uint64(30), res.Delivered)
}
