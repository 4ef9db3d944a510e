package workflow_test

import (
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"

	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// A TraceBackfill run is its activity, on the admin queue with the
// backfill's options, and the activity's result is the run's.
func TestTraceBackfillRunsItsActivity(t *testing.T) {
	wfs := newWorkflows(chainConfig(nil))
	env := newEnv(wfs, t0)
	env.RegisterWorkflowWithOptions(wfs.TraceBackfill, workflow.RegisterOptions{Name: temporal.TraceBackfillWorkflow})
	in := types.TraceBackfillInput{ChainID: chainID}
	want := types.TraceBackfillResult{Traced: 40, Frames: 170, Running: true, Top: 900, Floor: 0, Next: 861}
	env.OnActivity(acts.BackfillTraces, mock.Anything, in).Return(want, nil).Once()
	env.ExecuteWorkflow(temporal.TraceBackfillWorkflow, in)
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var res types.TraceBackfillResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, want, res)
	env.AssertExpectations(t)
}
