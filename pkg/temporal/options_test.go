package temporal_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

func TestIndexBlockStart(t *testing.T) {
	o := temporal.NewOptions("eth", config.DefaultChain())
	for key := 1; key <= 5; key++ {
		so := o.IndexBlockStart(42, key)
		require.Equal(t, "eth:index:42", so.ID)
		require.Equal(t, "index:eth", so.TaskQueue)
		require.Equal(t, key, so.Priority.PriorityKey, "the key is passed through as given")
		require.Equal(t, enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING, so.WorkflowIDConflictPolicy)
	}
}

func TestSchedulerStartRefusesSecond(t *testing.T) {
	so := temporal.NewOptions("eth", config.DefaultChain()).SchedulerStart()
	require.Equal(t, "eth:scheduler", so.ID)
	require.Equal(t, "admin:eth", so.TaskQueue)
	require.Equal(t, enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL, so.WorkflowIDConflictPolicy)
	require.True(t, so.WorkflowExecutionErrorWhenAlreadyStarted)
}

func TestLocalActivityOptionsMatchSeed(t *testing.T) {
	lo := temporal.NewOptions("eth", config.DefaultChain()).LocalActivity()
	require.Equal(t, "20s", lo.ScheduleToCloseTimeout.String())
	require.Equal(t, int32(5), lo.RetryPolicy.MaximumAttempts)
	require.Equal(t, "500ms", lo.RetryPolicy.InitialInterval.String())
	require.Equal(t, "5s", lo.RetryPolicy.MaximumInterval.String())
}
