package aggregate

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/temporal"
)

// The aggregator's Schedule: the scans' shape, its own ID, mode and run
// timeout, longer than its activity's.
func TestSchedule(t *testing.T) {
	o := temporal.NewOptions("eth", time.Minute)
	ag := Schedule(o, 5*time.Second)
	require.Equal(t, "eth:aggregate", ag.ScheduleID)
	require.Equal(t, "eth:aggregate", ag.WorkflowID)
	require.Equal(t, temporal.AggregateWorkflow, ag.Workflow)
	require.Equal(t, "admin:eth", ag.TaskQueue)
	require.Equal(t, []any{Input{ChainID: "eth"}}, ag.Args)
	mode, _ := ag.SearchAttributes.GetKeyword(temporal.IndexModeKey)
	require.Equal(t, "aggregate", mode)
	id, _ := ag.SearchAttributes.GetKeyword(temporal.ChainIDKey)
	require.Equal(t, "eth", id)
	require.Equal(t, "aggregator of chain eth, every 5s", ag.Summary)
	require.Equal(t, map[string]any{temporal.SummaryMemo: ag.Summary}, ag.Memo)
	require.Greater(t, ag.Timeout, activityOptions(o).StartToCloseTimeout)
	require.Less(t, Budget, activityOptions(o).StartToCloseTimeout, "an attempt returns before its timeout")
	require.Positive(t, activityOptions(o).HeartbeatTimeout)
}
