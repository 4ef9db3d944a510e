package temporal_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// seed level (5 = most urgent) → Temporal PriorityKey (1 = most urgent).
func TestPriorityKey(t *testing.T) {
	cases := []struct {
		level types.PriorityLevel
		key   int
	}{
		{types.UltraHigh, 1},
		{types.High, 2},
		{types.Medium, 3},
		{types.Low, 4},
		{types.UltraLow, 5},
		// Out of range clamps to the ends.
		{types.PriorityLevel(0), 5},
		{types.PriorityLevel(-3), 5},
		{types.PriorityLevel(6), 1},
	}
	for _, c := range cases {
		t.Run(c.level.String(), func(t *testing.T) {
			require.Equal(t, c.key, temporal.PriorityKey(c.level))
		})
	}
}

func TestIndexBlockStart(t *testing.T) {
	o := temporal.NewOptions("eth", config.DefaultChain())
	for _, lvl := range []types.PriorityLevel{types.UltraHigh, types.High, types.Medium, types.Low, types.UltraLow} {
		so := o.IndexBlockStart(42, lvl)
		require.Equal(t, "eth:index:42", so.ID)
		require.Equal(t, "index:eth", so.TaskQueue)
		require.Equal(t, temporal.PriorityKey(lvl), so.Priority.PriorityKey)
		require.Equal(t, enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING, so.WorkflowIDConflictPolicy)
	}
	require.Equal(t, 1, o.IndexBlockStart(1, types.UltraHigh).Priority.PriorityKey)
	require.Equal(t, 5, o.IndexBlockStart(1, types.UltraLow).Priority.PriorityKey)
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
