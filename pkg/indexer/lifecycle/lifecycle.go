// Package lifecycle pauses, resumes and removes chains: the one sequence
// of steps that `indexer chain pause|resume|remove` and every worker
// following the chain registry both take, with one rule for when the
// chain's scheduler is signalled. The commands store the new state first
// and then take the step; a worker, having read the stored state, takes
// the same step. See README.md.
package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/tideline-dev/tideline/pkg/registry"
)

// Rows is what a removal needs of the database (storage.ClickHouse).
type Rows interface {
	// ChainRows counts the chain's rows per table (PlanRemove).
	ChainRows(ctx context.Context, chainID string) (map[string]uint64, error)
	// DeleteChainRows starts deleting the chain's rows from every table
	// and returns the tables.
	DeleteChainRows(ctx context.Context, chainID string) ([]string, error)
	// PendingMutations counts the deletions not yet done.
	PendingMutations(ctx context.Context) (uint64, error)
}

// Chains pauses, resumes and removes chains.
type Chains struct {
	Temporal client.Client
	// Namespace is the Temporal namespace, where the chain's running
	// workflows are listed for a removal.
	Namespace string
	// Registry stores the states. Only the commands (Pause, Resume,
	// PlanRemove, Remove) use it: a worker follows what is stored.
	Registry *registry.Registry
	// Rows is the database, for a removal with its data (and its plan).
	Rows Rows
	// CallTimeout bounds the Temporal calls of one step; zero leaves them
	// to ctx. Workers set it, so that a call nobody answers never holds
	// their poll; a removal gets four times it, as it lists and terminates
	// every running workflow of the chain.
	CallTimeout time.Duration

	// afterStore, when set, runs in Remove between storing the removal
	// and its sweep: where tests put a worker's sweep that wins the race.
	afterStore func()
}

// AskTimeout bounds the question to the scheduler (is it paused?) in every
// case: a query is answered by a worker, and with none polling the chain's
// queue it would wait for one. Not answered, the scheduler is left as it
// is (see PauseResult.Unanswered).
const AskTimeout = 10 * time.Second

// bound is ctx limited to times CallTimeout, when one is set.
func (c *Chains) bound(ctx context.Context, times int) (context.Context, context.CancelFunc) {
	if c.CallTimeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, time.Duration(times)*c.CallTimeout)
}

// Step names a step of a chain's lifecycle, in the words of an error.
type Step string

// The steps that can fail.
const (
	StepSchedules Step = "pause or unpause its Schedules"
	StepAsk       Step = "ask whether its scheduler runs"
	StepSignal    Step = "signal its scheduler"
	StepHeadScan  Step = "start a HeadScan at once (it runs at its next interval)"
	StepTemporal  Step = "delete its Schedules and terminate its workflows"
	StepRows      Step = "delete its rows"
	StepCount     Step = "count its rows"
)

// Error is a step that failed, for one chain.
type Error struct {
	ChainID string
	Step    Step
	Err     error
}

func (e *Error) Error() string {
	return fmt.Sprintf("chain %q: could not %s: %v", e.ChainID, e.Step, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Failures lists the failed steps of err, in order: a step that fails does
// not stop the next (see README.md), so an error may hold several.
func Failures(err error) []*Error {
	if err == nil {
		return nil
	}
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		var out []*Error
		for _, e := range joined.Unwrap() {
			out = append(out, Failures(e)...)
		}
		return out
	}
	var e *Error
	if errors.As(err, &e) {
		return []*Error{e}
	}
	return nil
}
