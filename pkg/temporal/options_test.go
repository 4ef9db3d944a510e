package temporal_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/tideline-dev/tideline/pkg/chain"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

func TestIndexBlockStart(t *testing.T) {
	o := temporal.NewOptions("eth", time.Minute)
	for key := 1; key <= 5; key++ {
		so := o.IndexBlockStart(42, key)
		require.Equal(t, "eth:index:42", so.ID)
		require.Equal(t, "index:eth", so.TaskQueue)
		require.Equal(t, key, so.Priority.PriorityKey, "the key is passed through as given")
		require.Equal(t, enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING, so.WorkflowIDConflictPolicy)
	}
}

func TestSchedulerStartRefusesSecond(t *testing.T) {
	so := temporal.NewOptions("eth", time.Minute).SchedulerStart(chain.HeightRange{From: 3, To: 9})
	require.Equal(t, "eth:scheduler", so.ID)
	require.Equal(t, map[string]any{temporal.SchedulerOwnedMemo: chain.HeightRange{From: 3, To: 9}}, so.Memo)
	require.Equal(t, "admin:eth", so.TaskQueue)
	require.Equal(t, enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL, so.WorkflowIDConflictPolicy)
	require.True(t, so.WorkflowExecutionErrorWhenAlreadyStarted)
}

func TestLocalActivityOptionsMatchSeed(t *testing.T) {
	lo := temporal.NewOptions("eth", time.Minute).LocalActivity()
	require.Equal(t, "20s", lo.ScheduleToCloseTimeout.String())
	require.Equal(t, int32(5), lo.RetryPolicy.MaximumAttempts)
	require.Equal(t, "500ms", lo.RetryPolicy.InitialInterval.String())
	require.Equal(t, "5s", lo.RetryPolicy.MaximumInterval.String())
}

func TestIndexActivityTakesTheTimeoutGiven(t *testing.T) {
	ao := temporal.NewOptions("eth", 90*time.Second).IndexActivity()
	require.Equal(t, 90*time.Second, ao.StartToCloseTimeout)
	require.Equal(t, "index:eth", ao.TaskQueue)
	require.Zero(t, ao.RetryPolicy.MaximumAttempts, "a height is never given up")
}
