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

// Removing a chain from Temporal (`indexer chain remove`, and each worker
// that ran it): its Schedules deleted, every running workflow of it
// terminated. Safe to repeat and to run from several processes at once:
// what is gone already is no error.

// RemoveReason is the termination reason a removal leaves in the
// histories of the chain's workflows.
const RemoveReason = "chain removed (indexer chain remove): its Schedules were deleted and its workflows stopped"

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
	err := eachSchedule(ctx, c, chainID, func(id string, h client.ScheduleHandle, _ *client.ScheduleDescription) error {
		out.Schedules = append(out.Schedules, id)
		if dryRun {
			return nil
		}
		var notFound *serviceerror.NotFound
		if err := h.Delete(ctx); err != nil && !errors.As(err, &notFound) {
			return fmt.Errorf("temporal: deleting schedule %s: %w", id, err)
		}
		return nil
	})
	if err != nil {
		return out, err
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
