package retention

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/internal/testkit"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// Retention's Schedule: the scans' shape, its own ID, mode and run
// timeout, longer than its activity's.
func TestSchedule(t *testing.T) {
	o := temporal.NewOptions("eth", time.Minute)
	pr := Schedule(o, time.Hour)
	require.Equal(t, "eth:prune", pr.ScheduleID)
	require.Equal(t, temporal.PruneWorkflow, pr.Workflow)
	require.Equal(t, []any{Input{ChainID: "eth"}}, pr.Args)
	mode, _ := pr.SearchAttributes.GetKeyword(temporal.IndexModeKey)
	require.Equal(t, "prune", mode)
	id, _ := pr.SearchAttributes.GetKeyword(temporal.ChainIDKey)
	require.Equal(t, "eth", id)
	require.Equal(t, "retention of chain eth, every 1h0m0s", pr.Summary)
	require.Greater(t, pr.Timeout, activityOptions(o).StartToCloseTimeout)
}

// The Prune workflow runs its one activity on the admin queue and returns
// its result.
func TestPruneWorkflowRunsItsActivity(t *testing.T) {
	const chainID = "prune-wf"
	j := &Job{ChainID: chainID, Options: temporal.NewOptions(chainID, time.Minute)}
	want := Result{PrunedHeight: 200, HasPruned: true, Target: 200, Raised: true, Mutated: []string{"blocks"}}
	got, info, err := testkit.RunOneActivityJob(t, j.Register, temporal.PruneWorkflow, ActivityName, Input{ChainID: chainID},
		func(context.Context, Input) (Result, error) { return want, nil })
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.Equal(t, temporal.AdminQueue(chainID), info.TaskQueue)
}
