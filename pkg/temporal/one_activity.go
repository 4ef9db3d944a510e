package temporal

import "go.temporal.io/sdk/workflow"

// OneActivity runs the activity called name once (with its retries, as o
// says) and returns its result: the whole workflow of a side job whose run
// is one activity, so that the Web UI shows each run's result and
// failure. Its commands are those of a plain ExecuteActivity: histories
// recorded before a job used it replay.
func OneActivity[In, Out any](ctx workflow.Context, o workflow.ActivityOptions, name string, in In) (Out, error) {
	actx := workflow.WithActivityOptions(ctx, o)
	var res Out
	err := workflow.ExecuteActivity(actx, name, in).Get(actx, &res)
	return res, err
}
