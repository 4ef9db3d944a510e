package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/tideline-dev/tideline/pkg/registry"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// Removal is what a removal stopped and deleted or, planned, would.
type Removal struct {
	ChainID  string
	DropData bool
	// Stored is set when the command changed the stored state (false: the
	// chain was removed so already; always false for a worker's sweep).
	Stored bool
	// Schedules are the chain's Schedules that existed; Workflows the IDs
	// of its running workflows, the scheduler first. For Remove, both are
	// what ran when it began and what its sweep found: a worker that sees
	// the stored removal first sweeps some of them itself.
	Schedules, Workflows []string
	// Tables are those whose rows of the chain are being deleted (with
	// DropData; the deletions run in the background: WaitRowsDeleted).
	Tables []string
	// Rows counts the chain's rows per table (PlanRemove with DropData).
	Rows map[string]uint64
}

// PlanRemove says what Remove would do, changing nothing: the Schedules it
// would delete, the workflows it would terminate and, with dropData, the
// rows it would delete. A chain of the file, or one the registry does not
// hold, is refused as Remove refuses it.
func (c *Chains) PlanRemove(ctx context.Context, id string, dropData bool) (Removal, error) {
	res := Removal{ChainID: id, DropData: dropData}
	if _, err := c.Registry.Removable(ctx, id); err != nil {
		return res, err
	}
	tctx, cancel := c.bound(ctx, 4)
	r, err := temporal.RemoveChain(tctx, c.Temporal, c.Namespace, id, true)
	cancel()
	res.Schedules, res.Workflows = r.Schedules, r.Workflows
	if err != nil {
		return res, &Error{ChainID: id, Step: StepTemporal, Err: err}
	}
	if dropData {
		if res.Rows, err = c.Rows.ChainRows(ctx, id); err != nil {
			return res, &Error{ChainID: id, Step: StepCount, Err: err}
		}
	}
	return res, nil
}

// Remove stores the chain as removed (with dropData, its rows to be
// deleted too), then sweeps it at once (Sweep): every worker stops it
// within a poll, and each sweeps it again once it has stopped, so that
// nothing a worker started or wrote meanwhile survives.
func (c *Chains) Remove(ctx context.Context, id string, dropData bool) (Removal, error) {
	// What runs before the state is stored, so that the answer counts what
	// a worker's sweep removes before this one gets there. Only a count:
	// when Temporal does not answer, the sweep below fails and says so.
	tctx, cancel := c.bound(ctx, 4)
	before, _ := temporal.RemoveChain(tctx, c.Temporal, c.Namespace, id, true)
	cancel()
	_, changed, err := c.Registry.SetState(ctx, id, registry.Removed, dropData)
	if err != nil {
		return Removal{ChainID: id, DropData: dropData}, err
	}
	if c.afterStore != nil {
		c.afterStore()
	}
	res, err := c.Sweep(ctx, id, dropData)
	res.Stored = changed
	res.Schedules = union(before.Schedules, res.Schedules)
	res.Workflows = union(before.Workflows, res.Workflows)
	if sched := temporal.SchedulerID(id); slices.Contains(res.Workflows, sched) {
		res.Workflows = append([]string{sched}, slices.DeleteFunc(res.Workflows, func(w string) bool { return w == sched })...)
	}
	return res, err
}

// union is a's items, then b's that a lacks; nil when both are empty.
func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// Sweep removes a chain from Temporal (its Schedules deleted, then its
// scheduler and every other running workflow terminated) and, with
// dropData, starts deleting its rows from every table: the second half of
// Remove, and what a worker does once it has stopped a removed chain. The
// rows go even when Temporal could not be cleared entirely: the caller has
// stopped writing them, and the error asks for the removal again.
func (c *Chains) Sweep(ctx context.Context, id string, dropData bool) (Removal, error) {
	res := Removal{ChainID: id, DropData: dropData}
	tctx, cancel := c.bound(ctx, 4)
	r, err := temporal.RemoveChain(tctx, c.Temporal, c.Namespace, id, false)
	cancel()
	res.Schedules, res.Workflows = r.Schedules, r.Workflows
	var temporalErr, rowsErr error
	if err != nil {
		temporalErr = &Error{ChainID: id, Step: StepTemporal, Err: err}
	}
	if dropData {
		if res.Tables, err = c.Rows.DeleteChainRows(ctx, id); err != nil {
			rowsErr = &Error{ChainID: id, Step: StepRows, Err: err}
		}
	}
	return res, errors.Join(temporalErr, rowsErr)
}

// StillDeletingError is a deletion of rows not finished within the wait.
type StillDeletingError struct {
	Pending uint64
	Waited  time.Duration
}

func (e *StillDeletingError) Error() string {
	return fmt.Sprintf("%d deletions still running after %s; they go on in the background (system.mutations)", e.Pending, e.Waited)
}

// WaitRowsDeleted waits, at most wait, until the database has no
// unfinished deletion (mutation) left: the command's last step after
// Remove with its data. Workers do not wait: their deletions run on in
// the background.
func (c *Chains) WaitRowsDeleted(ctx context.Context, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	// A poll, not a retry: the command waits for ClickHouse's background
	// deletions, outside any activity; an error ends the wait.
	for {
		n, err := c.Rows.PendingMutations(ctx)
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return &StillDeletingError{Pending: n, Waited: wait}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}
