package workflow

import (
	"go.temporal.io/sdk/workflow"
)

// startActivityChange versions the starts as regular activities, so that
// runs recorded before it (starts as local activities) still replay.
const startActivityChange = "scheduler-start-activity"

// Why the starts are regular activities: a query is answered between
// workflow tasks, and a local activity runs inside the task that called
// it. StartIndex starts a batch of workflows and StartRange a range, each
// a Temporal call or several, which on a loaded box took seconds; the
// progress query (`indexer status`) waited behind them: p95 6.2 s, at
// most 6.8 s in BenchmarkSchedulerProgressQuery pinned to one busy core
// (docs/performance.md). As regular activities on the admin queue the
// task ends when the start is scheduled, and a query asked meanwhile is
// answered at once. Each start costs three history events instead of one
// marker; ContinueAsNew bounds the history by heights either way.

// startUnit runs one start (StartIndex or StartRange) until it succeeds,
// as untilDone does for local activities.
func (s *schedulerRun) startUnit(ctx, lctx workflow.Context, out any, fn any, arg any) error {
	if !s.startsAsActivities {
		return s.untilDone(ctx, lctx, out, fn, arg)
	}
	actx := workflow.WithActivityOptions(ctx, s.ch.Options.AdminActivity())
	return s.retryOutage(ctx, func() error { return workflow.ExecuteActivity(actx, fn, arg).Get(actx, out) })
}
