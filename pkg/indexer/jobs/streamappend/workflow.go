package streamappend

import (
	"go.temporal.io/sdk/workflow"

	"github.com/tideline-dev/tideline/pkg/temporal"
)

// Input is the input of one StreamAppend run (its Schedule's argument).
type Input struct {
	ChainID string `json:"chain_id"`
}

// Result says what one appender activity did: the events it appended and
// where the stream stands (its last seq, the next height it adds).
type Result struct {
	Appended uint64 `json:"appended"`
	Seq      uint64 `json:"seq"`
	Next     uint64 `json:"next"`
}

// Workflow runs from the job's Schedule while the chain's stream is on:
// its activity appends the chain's change-stream events for RunFor, then
// the Schedule's next run goes on from the log. The Web UI shows each
// run's result (events appended, last seq).
func (j *Job) Workflow(ctx workflow.Context, in Input) (Result, error) {
	return temporal.OneActivity[Input, Result](ctx, activityOptions(j.Options), ActivityName, in)
}
