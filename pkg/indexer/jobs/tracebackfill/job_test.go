package tracebackfill

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/internal/testkit"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// The backfill's Schedule: the scans' shape, its own ID, mode and run
// timeout, longer than its activity's, whose attempt returns at its budget.
func TestSchedule(t *testing.T) {
	o := temporal.NewOptions("eth", time.Minute)
	p := Schedule(o, time.Minute)
	require.Equal(t, "eth:traces-backfill", p.ScheduleID)
	require.Equal(t, temporal.TraceBackfillWorkflow, p.Workflow)
	require.Equal(t, []any{Input{ChainID: "eth"}}, p.Args)
	mode, _ := p.SearchAttributes.GetKeyword(temporal.IndexModeKey)
	require.Equal(t, "traces", mode)
	require.Less(t, Budget, activityOptions(o).StartToCloseTimeout)
	require.Greater(t, p.Timeout, activityOptions(o).StartToCloseTimeout)
}

// A TraceBackfill run is its activity, on the admin queue with the
// backfill's options, and the activity's result is the run's.
func TestTraceBackfillRunsItsActivity(t *testing.T) {
	const chainID = "backfill-wf"
	j := &Job{ChainID: chainID, Options: temporal.NewOptions(chainID, time.Minute)}
	in := Input{ChainID: chainID}
	want := Result{Traced: 40, Frames: 170, Running: true, Top: 900, Floor: 0, Next: 861}
	calls := 0
	res, _, err := testkit.RunOneActivityJob(t, j.Register, temporal.TraceBackfillWorkflow, ActivityName, in,
		func(_ context.Context, got Input) (Result, error) {
			calls++
			require.Equal(t, in, got)
			return want, nil
		})
	require.NoError(t, err)
	require.Equal(t, want, res)
	require.Equal(t, 1, calls)
}
