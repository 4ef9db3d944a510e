package temporal

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"golang.org/x/sync/errgroup"
)

// A chain's controls in Temporal (`indexer chain pause|resume|remove`, and
// each worker as it follows the chain registry): its Schedules, its
// scheduler, its running workflows. Every call is safe to repeat and to
// make from several processes at once: what is already as asked, or gone,
// is no error.

// Names of a chain's scheduler controls.
const (
	// SchedulerPauseSignal pauses (true) or resumes (false) a chain's
	// SchedulerWorkflow: paused, it starts nothing new and waits.
	SchedulerPauseSignal = "pause"
	// SchedulerPausedQuery answers whether the scheduler is paused.
	SchedulerPausedQuery = "paused"
)

// PauseNote is the note a paused Schedule shows in the Web UI.
const PauseNote = "chain paused (indexer chain pause); indexer chain resume undoes it"

// RemoveReason is the termination reason a removal leaves in the
// histories of the chain's workflows.
const RemoveReason = "chain removed (indexer chain remove): its Schedules were deleted and its workflows stopped"

// ScheduleIDs are the IDs of a chain's Schedules: the scans, the
// aggregator and, with retention on, pruning. Those that do not exist are
// skipped by every control below.
func ScheduleIDs(chainID string) []string {
	return []string{HeadScanScheduleID(chainID), GapScanScheduleID(chainID), AggregateScheduleID(chainID), PruneScheduleID(chainID)}
}

// SetSchedulesPaused pauses (or unpauses) the chain's Schedules and returns
// the IDs of those it changed; a Schedule already so, or missing, is left.
func SetSchedulesPaused(ctx context.Context, c client.Client, chainID string, paused bool) ([]string, error) {
	var changed []string
	for _, id := range ScheduleIDs(chainID) {
		h := c.ScheduleClient().GetHandle(ctx, id)
		d, err := h.Describe(ctx)
		var notFound *serviceerror.NotFound
		if errors.As(err, &notFound) {
			continue
		}
		if err != nil {
			return changed, fmt.Errorf("temporal: describing schedule %s: %w", id, err)
		}
		if st := d.Schedule.State; st != nil && st.Paused == paused {
			continue
		}
		if paused {
			err = h.Pause(ctx, client.SchedulePauseOptions{Note: PauseNote})
		} else {
			err = h.Unpause(ctx, client.ScheduleUnpauseOptions{Note: "chain resumed (indexer chain resume)"})
		}
		if err != nil {
			return changed, fmt.Errorf("temporal: pausing (%v) schedule %s: %w", paused, id, err)
		}
		changed = append(changed, id)
	}
	return changed, nil
}

// SchedulesPaused reports how many of the chain's Schedules exist and how
// many of them are paused.
func SchedulesPaused(ctx context.Context, c client.Client, chainID string) (exist, paused int, err error) {
	for _, id := range ScheduleIDs(chainID) {
		d, err := c.ScheduleClient().GetHandle(ctx, id).Describe(ctx)
		var notFound *serviceerror.NotFound
		if errors.As(err, &notFound) {
			continue
		}
		if err != nil {
			return exist, paused, fmt.Errorf("temporal: describing schedule %s: %w", id, err)
		}
		exist++
		if st := d.Schedule.State; st != nil && st.Paused {
			paused++
		}
	}
	return exist, paused, nil
}

// SignalSchedulerPause sends the chain's running scheduler the pause
// signal (paused true) or the resume (false); running is false when no
// scheduler runs.
func SignalSchedulerPause(ctx context.Context, c client.Client, chainID string, paused bool) (running bool, err error) {
	err = c.SignalWorkflow(ctx, SchedulerID(chainID), "", SchedulerPauseSignal, paused)
	var notFound *serviceerror.NotFound
	switch {
	case errors.As(err, &notFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("temporal: signalling %s: %w", SchedulerID(chainID), err)
	}
	return true, nil
}

// SchedulerPaused asks the chain's scheduler whether it is paused; running
// is false when none runs. A scheduler from before the pause existed does
// not answer the query (an error): it cannot be paused, only reset.
func SchedulerPaused(ctx context.Context, c client.Client, chainID string) (running, paused bool, err error) {
	d, err := c.DescribeWorkflowExecution(ctx, SchedulerID(chainID), "")
	var notFound *serviceerror.NotFound
	switch {
	case errors.As(err, &notFound):
		return false, false, nil
	case err != nil:
		return false, false, fmt.Errorf("temporal: describing %s: %w", SchedulerID(chainID), err)
	case d.GetWorkflowExecutionInfo().GetCloseTime() != nil:
		return false, false, nil // a closed run answers queries too, from its history
	}
	runID := d.GetWorkflowExecutionInfo().GetExecution().GetRunId()
	v, err := c.QueryWorkflow(ctx, SchedulerID(chainID), runID, SchedulerPausedQuery)
	switch {
	case errors.As(err, &notFound):
		return false, false, nil
	case err != nil:
		return true, false, fmt.Errorf("temporal: asking %s whether it is paused: %w", SchedulerID(chainID), err)
	}
	if err := v.Get(&paused); err != nil {
		return true, false, fmt.Errorf("temporal: %s's paused answer: %w", SchedulerID(chainID), err)
	}
	return true, paused, nil
}

// ChainRemoval is what RemoveChain removed (or, for a dry run, would).
type ChainRemoval struct {
	Schedules []string // the chain's Schedules that existed
	Workflows []string // IDs of the chain's running workflows, the scheduler first
}

// RemoveChain stops everything a chain has in Temporal: it deletes its
// Schedules (no scan starts any more), then terminates its scheduler and
// every other running workflow of the chain (scans, IndexBlock,
// IndexRange), with RemoveReason in their histories. Nothing stored is
// touched. With dryRun it only lists.
func RemoveChain(ctx context.Context, c client.Client, namespace, chainID string, dryRun bool) (ChainRemoval, error) {
	var out ChainRemoval
	if chainID == "" {
		return out, errors.New("temporal: remove: empty chain id")
	}
	for _, id := range ScheduleIDs(chainID) {
		h := c.ScheduleClient().GetHandle(ctx, id)
		_, err := h.Describe(ctx)
		var notFound *serviceerror.NotFound
		if errors.As(err, &notFound) {
			continue
		}
		if err != nil {
			return out, fmt.Errorf("temporal: describing schedule %s: %w", id, err)
		}
		out.Schedules = append(out.Schedules, id)
		if dryRun {
			continue
		}
		if err := h.Delete(ctx); err != nil && !errors.As(err, &notFound) {
			return out, fmt.Errorf("temporal: deleting schedule %s: %w", id, err)
		}
	}
	ids, err := runningOfChain(ctx, c, namespace, chainID)
	if err != nil {
		return out, err
	}
	out.Workflows = ids
	if dryRun {
		return out, nil
	}
	// The scheduler first (runningOfChain puts it there), so that it starts
	// nothing more meanwhile.
	if len(ids) > 0 && ids[0] == SchedulerID(chainID) {
		if err := terminateFor(ctx, c, ids[0], RemoveReason); err != nil {
			return out, fmt.Errorf("temporal: remove chain %q: %w", chainID, err)
		}
		ids = ids[1:]
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for _, id := range ids {
		g.Go(func() error { return terminateFor(gctx, c, id, RemoveReason) })
	}
	if err := g.Wait(); err != nil {
		return out, fmt.Errorf("temporal: remove chain %q: %w", chainID, err)
	}
	return out, nil
}

// runningOfChain lists the IDs of the chain's running workflows, the
// scheduler first. Every workflow ID of a chain starts with "<chain>:"
// (names.go), and chain IDs hold no ':', so the prefix is the chain's
// alone; the query filters by status only, which every visibility store
// understands.
func runningOfChain(ctx context.Context, c client.Client, namespace, chainID string) ([]string, error) {
	prefix := chainID + ":"
	var ids []string
	var token []byte
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: namespace, Query: "ExecutionStatus = 'Running'", PageSize: 1000, NextPageToken: token,
		})
		if err != nil {
			return nil, fmt.Errorf("temporal: listing running workflows of chain %q: %w", chainID, err)
		}
		for _, e := range resp.GetExecutions() {
			id := e.GetExecution().GetWorkflowId()
			if !strings.HasPrefix(id, prefix) {
				continue
			}
			if id == SchedulerID(chainID) {
				ids = append([]string{id}, ids...)
			} else {
				ids = append(ids, id)
			}
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			return ids, nil
		}
	}
}

// terminateFor ends a workflow's current run with reason; one that ended
// meanwhile is fine.
func terminateFor(ctx context.Context, c client.Client, id, reason string) error {
	err := c.TerminateWorkflow(ctx, id, "", reason)
	var notFound *serviceerror.NotFound
	if err != nil && !errors.As(err, &notFound) {
		return fmt.Errorf("terminating %s: %w", id, err)
	}
	return nil
}
