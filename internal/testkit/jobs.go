package testkit

import (
	"context"
	"testing"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
)

// RunOneActivityJob runs a side job's workflow, registered by the job's
// own register under the names the worker uses, with its activity
// (actName) answered by answer, and returns the run's result, the
// activity's info as Temporal gave it (queue, timeouts) and the run's
// error: what a job's workflow test asserts on.
func RunOneActivityJob[In, Out any](t *testing.T, register func(worker.Registry), wfName, actName string, in In,
	answer func(context.Context, In) (Out, error)) (Out, activity.Info, error) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	register(env)
	var info activity.Info
	env.OnActivity(actName, mock.Anything, mock.Anything).Return(func(ctx context.Context, in In) (Out, error) {
		info = activity.GetInfo(ctx)
		return answer(ctx, in)
	})
	env.ExecuteWorkflow(wfName, in)
	var out Out
	if !env.IsWorkflowCompleted() {
		t.Fatalf("%s did not complete", wfName)
	}
	if err := env.GetWorkflowError(); err != nil {
		return out, info, err
	}
	if err := env.GetWorkflowResult(&out); err != nil {
		t.Fatalf("%s's result: %v", wfName, err)
	}
	return out, info, nil
}
