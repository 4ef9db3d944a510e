package tokenmeta

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/internal/testkit"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// The job's Schedule fires every Interval, and an attempt returns at its
// budget, before its activity's timeout.
func TestSchedule(t *testing.T) {
	o := temporal.NewOptions("eth", time.Minute)
	p := Schedule(o)
	require.Equal(t, "eth:token-metadata", p.ScheduleID)
	require.Equal(t, temporal.TokenMetadataWorkflow, p.Workflow)
	require.Equal(t, Interval, p.Every)
	require.Equal(t, []any{Input{ChainID: "eth"}}, p.Args)
	require.Less(t, Budget, activityOptions(o).StartToCloseTimeout)
	require.Greater(t, p.Timeout, activityOptions(o).StartToCloseTimeout)
}

// The TokenMetadata workflow runs its one activity on the admin queue,
// with a heartbeat timeout, and returns its result.
func TestWorkflowRunsItsActivity(t *testing.T) {
	const chainID = "meta-wf"
	j := &Job{ChainID: chainID, Options: temporal.NewOptions(chainID, time.Minute)}
	want := Result{Height: 99, HasHeight: true, Watermark: 99, Tokens: 3, Answered: 2}
	got, info, err := testkit.RunOneActivityJob(t, j.Register, temporal.TokenMetadataWorkflow, ActivityName, Input{ChainID: chainID},
		func(context.Context, Input) (Result, error) { return want, nil })
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.Equal(t, temporal.AdminQueue(chainID), info.TaskQueue)
	require.Equal(t, time.Minute, info.HeartbeatTimeout)
}
