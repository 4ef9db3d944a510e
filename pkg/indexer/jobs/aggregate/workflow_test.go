package aggregate

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/tideline-dev/tideline/pkg/temporal"
)

const chainID = "agg-wf"

// newEnv is a test environment with the job's workflow registered under
// its name, and its activity's name bound to run.
func newEnv(t *testing.T, run func(context.Context, Input) (Result, error)) *testsuite.TestWorkflowEnvironment {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	j := &Job{ChainID: chainID, Options: temporal.NewOptions(chainID, time.Minute)}
	j.Register(env) // under the names the worker registers them by
	env.OnActivity(ActivityName, mock.Anything, mock.Anything).Return(run)
	return env
}

// The Aggregate workflow runs its one activity on the admin queue, with a
// heartbeat timeout, and returns its result; a failure of the activity is
// the run's failure (the Web UI shows it; the next run of the Schedule
// tries again).
func TestAggregateWorkflowRunsItsActivity(t *testing.T) {
	want := Result{Height: 120, HasHeight: true, Counted: 121, Chunks: 1, Watermark: 120}
	var info activity.Info
	env := newEnv(t, func(ctx context.Context, in Input) (Result, error) {
		require.Equal(t, chainID, in.ChainID)
		info = activity.GetInfo(ctx)
		return want, nil
	})
	env.ExecuteWorkflow(temporal.AggregateWorkflow, Input{ChainID: chainID})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var got Result
	require.NoError(t, env.GetWorkflowResult(&got))
	require.Equal(t, want, got)
	require.Equal(t, temporal.AdminQueue(chainID), info.TaskQueue)
	require.Equal(t, 30*time.Second, info.HeartbeatTimeout)

	env = newEnv(t, func(context.Context, Input) (Result, error) {
		return Result{}, sdktemporal.NewNonRetryableApplicationError("pruned", ErrTypeAggregatesPruned, nil)
	})
	env.ExecuteWorkflow(temporal.AggregateWorkflow, Input{ChainID: chainID})
	var app *sdktemporal.ApplicationError
	require.True(t, errors.As(env.GetWorkflowError(), &app))
	require.Equal(t, ErrTypeAggregatesPruned, app.Type())
}
