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

// ResetReason is the termination reason a reset leaves in each workflow's
// history, for whoever reads it in the Web UI.
const ResetReason = "reset by an operator (indexer scheduler reset): the scheduler and in-flight indexing of the chain were stopped; stored data is untouched and the scans find what is still missing"

// SchedulerReset is what a reset stopped (or, for a dry run, would stop).
type SchedulerReset struct {
	Scheduler bool     // the chain's SchedulerWorkflow was running
	Indexing  []string // workflow IDs of the chain's running IndexBlock and IndexRange workflows
}

// ResetScheduler stops a chain's catch-up for good: it terminates the
// chain's SchedulerWorkflow and every running IndexBlock and IndexRange
// workflow of the chain (they are started by the scheduler and the scans
// as workflows of their own, not as children, so terminating the scheduler
// alone would leave its window running). Nothing stored is touched, and a
// height whose workflow is terminated is simply not indexed yet: the next
// HeadScan (seconds) starts the live heights again and GapScan, or a new
// scheduler, the rest. With dryRun it only lists.
//
// It is the way out for a scheduler that holds a chain hostage, for
// example one given a range above the real chain by a phantom head.
func ResetScheduler(ctx context.Context, c client.Client, namespace, chainID string, dryRun bool) (SchedulerReset, error) {
	var out SchedulerReset
	if chainID == "" {
		return out, errors.New("temporal: reset: empty chain id")
	}
	d, err := c.DescribeWorkflowExecution(ctx, SchedulerID(chainID), "")
	var notFound *serviceerror.NotFound
	switch {
	case errors.As(err, &notFound):
	case err != nil:
		return out, fmt.Errorf("temporal: reset chain %q: describing %s: %w", chainID, SchedulerID(chainID), err)
	default:
		out.Scheduler = d.GetWorkflowExecutionInfo().GetCloseTime() == nil
	}
	if out.Indexing, err = runningIndexing(ctx, c, namespace, chainID); err != nil {
		return out, err
	}
	if dryRun {
		return out, nil
	}
	// The scheduler first, so that it starts nothing more meanwhile.
	if out.Scheduler {
		if err := terminate(ctx, c, SchedulerID(chainID)); err != nil {
			return out, fmt.Errorf("temporal: reset chain %q: %w", chainID, err)
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for _, id := range out.Indexing {
		g.Go(func() error { return terminate(gctx, c, id) })
	}
	if err := g.Wait(); err != nil {
		return out, fmt.Errorf("temporal: reset chain %q: %w", chainID, err)
	}
	return out, nil
}

// runningIndexing lists the chain's running IndexBlock and IndexRange
// workflows. The query filters by type and status only (what every
// visibility store understands); the chain is told by the ID's prefix.
func runningIndexing(ctx context.Context, c client.Client, namespace, chainID string) ([]string, error) {
	prefixes := []string{IndexBlockID(chainID, 0), IndexRangeID(chainID, 0, 0)}
	for i, p := range prefixes {
		prefixes[i] = p[:strings.LastIndexByte(p, ':')+1]
	}
	query := fmt.Sprintf("(WorkflowType = '%s' OR WorkflowType = '%s') AND ExecutionStatus = 'Running'", IndexBlockWorkflow, IndexRangeWorkflow)
	var ids []string
	var token []byte
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: namespace, Query: query, PageSize: 1000, NextPageToken: token,
		})
		if err != nil {
			return nil, fmt.Errorf("temporal: listing running indexing workflows of chain %q: %w", chainID, err)
		}
		for _, e := range resp.GetExecutions() {
			id := e.GetExecution().GetWorkflowId()
			for _, p := range prefixes {
				if strings.HasPrefix(id, p) {
					ids = append(ids, id)
					break
				}
			}
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			return ids, nil
		}
	}
}

// terminate ends a workflow's current run; one that ended meanwhile is
// fine.
func terminate(ctx context.Context, c client.Client, id string) error {
	err := c.TerminateWorkflow(ctx, id, "", ResetReason)
	var notFound *serviceerror.NotFound
	if err != nil && !errors.As(err, &notFound) {
		return fmt.Errorf("terminating %s: %w", id, err)
	}
	return nil
}
