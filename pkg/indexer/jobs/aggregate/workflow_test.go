package aggregate

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	sdktemporal "go.temporal.io/sdk/temporal"

	"github.com/tideline-dev/tideline/internal/testkit"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

const chainID = "agg-wf"

// The Aggregate workflow runs its one activity on the admin queue, with a
// heartbeat timeout, and returns its result; a failure of the activity is
// the run's failure (the Web UI shows it; the next run of the Schedule
// tries again).
func TestAggregateWorkflowRunsItsActivity(t *testing.T) {
	j := &Job{ChainID: chainID, Options: temporal.NewOptions(chainID, time.Minute)}
	run := func(answer func(context.Context, Input) (Result, error)) (Result, activity.Info, error) {
		return testkit.RunOneActivityJob(t, j.Register, temporal.AggregateWorkflow, ActivityName, Input{ChainID: chainID}, answer)
	}
	want := Result{Height: 120, HasHeight: true, Counted: 121, Chunks: 1, Watermark: 120}
	got, info, err := run(func(_ context.Context, in Input) (Result, error) {
		require.Equal(t, chainID, in.ChainID)
		return want, nil
	})
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.Equal(t, temporal.AdminQueue(chainID), info.TaskQueue)
	require.Equal(t, 30*time.Second, info.HeartbeatTimeout)

	_, _, err = run(func(context.Context, Input) (Result, error) {
		return Result{}, sdktemporal.NewNonRetryableApplicationError("pruned", ErrTypeAggregatesPruned, nil)
	})
	var app *sdktemporal.ApplicationError
	require.True(t, errors.As(err, &app))
	require.Equal(t, ErrTypeAggregatesPruned, app.Type())
}
