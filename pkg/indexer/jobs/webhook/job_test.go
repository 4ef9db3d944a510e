package webhook

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// The names a running delivery's history and its operators know it by,
// and its JSON: moving the job to a package of its own changed none.
func TestNamesAreTheHistories(t *testing.T) {
	require.Equal(t, "WebhookDelivery", temporal.WebhookWorkflow)
	require.Equal(t, "eth:webhook:0123456789ab", temporal.WebhookID("eth", "0123456789ab"))
	require.Equal(t, "DeliverWebhook", DeliverActivity)
	require.Equal(t, "NoteWebhookDeadLetter", NoteActivity)
	require.Equal(t, "control", ControlSignal)
	require.Equal(t, []string{"pause", "resume", "remove"}, []string{SignalPause, SignalResume, SignalRemove})
	require.Equal(t, "progress", ProgressQuery)
	require.Equal(t, "webhook_state", StateMemo)
	require.Equal(t, []string{"active", "paused", "dead_letter", "removed"}, []string{Active, Paused, DeadLetter, Removed})

	in, err := json.Marshal(Input{ChainID: "eth", SubscriptionID: "s", Progress: Progress{Cursor: 1, State: Active}})
	require.NoError(t, err)
	require.JSONEq(t, `{"chain_id":"eth","subscription_id":"s","progress":{"cursor":1,"state":"active",`+
		`"delivered":0,"skipped":0,"failures":0,"dead_letters":0}}`, string(in))
	res, err := json.Marshal(DeliverResult{Cursor: 2, Failed: "x", State: Paused})
	require.NoError(t, err)
	require.JSONEq(t, `{"cursor":2,"delivered":0,"skipped":0,"state":"paused","failed":"x"}`, string(res))
	act, err := json.Marshal(DeliverInput{ChainID: "eth", SubscriptionID: "s", Cursor: 3})
	require.NoError(t, err)
	require.JSONEq(t, `{"chain_id":"eth","subscription_id":"s","cursor":3}`, string(act))
}

// One delivery per subscription however many start it: a fixed ID on the
// admin queue, use-existing, startable again once ended; the Web UI sees
// its mode, summary and state.
func TestStartOptions(t *testing.T) {
	so := StartOptions(temporal.NewOptions("eth", time.Minute), "0123456789ab")
	require.Equal(t, "eth:webhook:0123456789ab", so.ID)
	require.Equal(t, temporal.AdminQueue("eth"), so.TaskQueue)
	require.Equal(t, enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING, so.WorkflowIDConflictPolicy)
	require.Equal(t, enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE, so.WorkflowIDReusePolicy)
	require.Equal(t, "active", so.Memo[StateMemo])
	require.Equal(t, "webhook deliveries of subscription 0123456789ab of chain eth", so.Memo[temporal.SummaryMemo])
	mode, ok := so.TypedSearchAttributes.GetKeyword(temporal.IndexModeKey)
	require.True(t, ok)
	require.Equal(t, "webhook", mode)
}

// The delivery activity: bounded by dead_letter_after without a delivery,
// retried with webhooks.retry, waited for when cancelled (two deliveries
// never overlap), its attempt longer than RunFor and a POST.
func TestActivityOptions(t *testing.T) {
	w := config.DefaultWebhooks()
	ao := activityOptions(temporal.NewOptions("eth", time.Minute), w)
	require.Equal(t, temporal.AdminQueue("eth"), ao.TaskQueue)
	require.Equal(t, w.DeadLetterAfter, ao.ScheduleToCloseTimeout)
	require.True(t, ao.WaitForCancellation)
	require.Greater(t, ao.StartToCloseTimeout, RunFor+w.RequestTimeout)
	require.Greater(t, ao.HeartbeatTimeout, w.RequestTimeout+w.PollInterval)
	require.Equal(t, temporal.RetryPolicy(w.Retry), ao.RetryPolicy)
}
