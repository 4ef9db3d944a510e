package streamappend

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/tideline-dev/tideline/internal/testkit"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// The appender's Schedule fires every RunFor with overlap buffer-one (the
// next run starts when one ends, never beside it), and its activity
// returns before its timeout.
func TestSchedule(t *testing.T) {
	o := temporal.NewOptions("eth", time.Minute)
	p := Schedule(o)
	require.Equal(t, "eth:stream", p.ScheduleID)
	require.Equal(t, temporal.StreamAppendWorkflow, p.Workflow)
	require.Equal(t, RunFor, p.Every)
	require.Equal(t, enumspb.SCHEDULE_OVERLAP_POLICY_BUFFER_ONE, p.Overlap)
	require.Equal(t, []any{Input{ChainID: "eth"}}, p.Args)
	require.Less(t, RunFor, activityOptions(o).StartToCloseTimeout)
	require.Greater(t, p.Timeout, activityOptions(o).StartToCloseTimeout)
}

// The StreamAppend workflow runs its one activity on the admin queue, with
// a heartbeat timeout, and returns its result.
func TestWorkflowRunsItsActivity(t *testing.T) {
	const chainID = "stream-wf"
	j := &Job{ChainID: chainID, Options: temporal.NewOptions(chainID, time.Minute)}
	want := Result{Appended: 3, Seq: 9, Next: 12}
	got, info, err := testkit.RunOneActivityJob(t, j.Register, temporal.StreamAppendWorkflow, ActivityName, Input{ChainID: chainID},
		func(_ context.Context, in Input) (Result, error) {
			require.Equal(t, chainID, in.ChainID)
			return want, nil
		})
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.Equal(t, temporal.AdminQueue(chainID), info.TaskQueue)
	require.Equal(t, 15*time.Second, info.HeartbeatTimeout)
}
