package activity

import (
	"context"
	"errors"
	"fmt"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/converter"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// progressQueryTimeout bounds the progress query of CheckScheduler: a query
// waits for the scheduler's workflow task, which a busy worker can hold
// for seconds.
const progressQueryTimeout = 3 * time.Second

// CheckScheduler tells whether the chain's SchedulerWorkflow runs and which
// heights it owns. It calls the Temporal API, so it is a regular activity.
// What it owns is read from the describe call's memo
// (temporal.SchedulerOwnedMemo), which needs no answer from the workflow;
// the progress query only feeds the bucket gauges, and a scheduler too busy
// to answer it within progressQueryTimeout does not fail the scan. A
// scheduler started before the memo existed is asked by the query alone.
func (a *Activities) CheckScheduler(ctx context.Context, _ string) (types.SchedulerStatus, error) {
	chainID := a.Chain.ID
	id := temporal.SchedulerID(chainID)
	desc, err := a.Temporal.DescribeWorkflowExecution(ctx, id, "")
	var notFound *serviceerror.NotFound
	switch {
	case errors.As(err, &notFound):
		a.schedulerIdle(chainID)
		return types.SchedulerStatus{}, nil
	case err != nil:
		return types.SchedulerStatus{}, fmt.Errorf("chain %s: describe scheduler %s: %w", chainID, id, err)
	}
	if desc.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		a.schedulerIdle(chainID)
		return types.SchedulerStatus{}, nil
	}
	a.Metrics.SchedulerActive.WithLabelValues(chainID).Set(1)
	owned, memo, err := ownedFromMemo(desc.GetWorkflowExecutionInfo().GetMemo().GetFields()[temporal.SchedulerOwnedMemo])
	if err != nil {
		return types.SchedulerStatus{}, fmt.Errorf("chain %s: scheduler %s memo: %w", chainID, id, err)
	}
	qctx := ctx
	if memo {
		var cancel context.CancelFunc
		qctx, cancel = context.WithTimeout(ctx, progressQueryTimeout)
		defer cancel()
	}
	p, err := a.schedulerProgress(qctx, chainID, id)
	switch {
	case err != nil && memo:
		a.logger().Warn("scheduler did not answer its progress query; its range is known from the memo",
			zap.Uint64("owned_from", owned.From), zap.Uint64("owned_to", owned.To), zap.Error(err))
		return types.SchedulerStatus{Running: true, Owned: owned}, nil
	case err != nil:
		return types.SchedulerStatus{}, err
	case !memo:
		owned = p.Owned
	}
	return types.SchedulerStatus{Running: true, Owned: owned}, nil
}

// ownedFromMemo decodes the owned span from the scheduler's memo; found is
// false when the memo has none.
func ownedFromMemo(p *commonpb.Payload) (owned chaindata.HeightRange, found bool, err error) {
	if p == nil {
		return chaindata.HeightRange{}, false, nil
	}
	if err := converter.GetDefaultDataConverter().FromPayload(p, &owned); err != nil {
		return chaindata.HeightRange{}, false, err
	}
	return owned, true, nil
}

// schedulerProgress asks the scheduler's progress query and sets the
// bucket gauges from it.
func (a *Activities) schedulerProgress(ctx context.Context, chainID, id string) (temporal.SchedulerProgress, error) {
	v, err := a.Temporal.QueryWorkflow(ctx, id, "", temporal.SchedulerProgressQuery)
	if err != nil {
		return temporal.SchedulerProgress{}, fmt.Errorf("chain %s: query scheduler %s progress: %w", chainID, id, err)
	}
	var p temporal.SchedulerProgress
	if err := v.Get(&p); err != nil {
		return temporal.SchedulerProgress{}, fmt.Errorf("chain %s: decode scheduler progress: %w", chainID, err)
	}
	for _, b := range p.Buckets {
		a.Metrics.BlocksByPriority.WithLabelValues(chainID, types.PriorityLevel(b.Level).String()).Set(float64(b.Total - b.Done))
	}
	return p, nil
}

// schedulerIdle zeroes the scheduler's gauges when none runs.
func (a *Activities) schedulerIdle(chainID string) {
	a.Metrics.SchedulerActive.WithLabelValues(chainID).Set(0)
	for _, lvl := range types.Levels {
		a.Metrics.BlocksByPriority.WithLabelValues(chainID, lvl.String()).Set(0)
	}
}

// StartScheduler starts the chain's SchedulerWorkflow through the client, so
// that it outlives the HeadScan that asked for it. Temporal refuses a second
// one with the fixed ID; that refusal is reported, not failed.
//
// It reads the watermark again first and drops what it has passed. The
// scan read the watermark before it asked CheckScheduler, and a scheduler
// that finished in between (it finishes only once its heights are
// indexed, see drain) left a backlog that is no longer there: started
// with the scan's stale range, a second scheduler would walk the whole
// range again only to find it indexed.
func (a *Activities) StartScheduler(ctx context.Context, in types.SchedulerInput) (types.StartSchedulerResult, error) {
	chainID := a.Chain.ID
	wm, err := a.Watermark(ctx, chainID)
	if err != nil {
		return types.StartSchedulerResult{}, err
	}
	if wm.Found {
		in.Remaining = chaindata.Subtract(in.Remaining, chaindata.HeightRange{From: 0, To: wm.Height})
	}
	if len(in.Remaining) == 0 {
		a.logger().Info("scheduler not started: the watermark passed the backlog since the scan read it",
			zap.Uint64("watermark", wm.Height))
		return types.StartSchedulerResult{CaughtUp: true}, nil
	}
	_, err = a.Temporal.ExecuteWorkflow(ctx, a.Chain.Options.SchedulerStart(chaindata.Span(in.Remaining), string(types.IndexModeScheduler)), temporal.SchedulerWorkflow, in)
	var already *serviceerror.WorkflowExecutionAlreadyStarted
	switch {
	case errors.As(err, &already):
		a.logger().Info("scheduler already running; not started again")
		return types.StartSchedulerResult{AlreadyRunning: true}, nil
	case err != nil:
		return types.StartSchedulerResult{}, fmt.Errorf("chain %s: start scheduler: %w", chainID, err)
	}
	span := chaindata.Span(in.Remaining)
	a.logger().Info("scheduler started", zap.Uint64("from", span.From), zap.Uint64("to", span.To),
		zap.Uint64("heights", chaindata.TotalLen(in.Remaining)))
	a.Metrics.SchedulerActive.WithLabelValues(chainID).Set(1)
	return types.StartSchedulerResult{Started: true}, nil
}
