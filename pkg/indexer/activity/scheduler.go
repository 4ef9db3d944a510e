package activity

import (
	"context"
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/chain"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// CheckScheduler tells whether the chain's SchedulerWorkflow runs and which
// heights it owns. It calls the Temporal API, so it is a regular activity.
func (a *Activities) CheckScheduler(ctx context.Context, chainID string) (types.SchedulerStatus, error) {
	if _, err := a.chain(chainID); err != nil {
		return types.SchedulerStatus{}, err
	}
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
	v, err := a.Temporal.QueryWorkflow(ctx, id, "", temporal.SchedulerProgressQuery)
	if err != nil {
		return types.SchedulerStatus{}, fmt.Errorf("chain %s: query scheduler %s progress: %w", chainID, id, err)
	}
	var p types.SchedulerProgress
	if err := v.Get(&p); err != nil {
		return types.SchedulerStatus{}, fmt.Errorf("chain %s: decode scheduler progress: %w", chainID, err)
	}
	for _, b := range p.Buckets {
		a.Metrics.BlocksByPriority.WithLabelValues(chainID, b.Level.String()).Set(float64(b.Total - b.Done))
	}
	return types.SchedulerStatus{Running: true, Owned: p.Owned}, nil
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
func (a *Activities) StartScheduler(ctx context.Context, in types.SchedulerInput) (types.StartSchedulerResult, error) {
	c, err := a.chain(in.ChainID)
	if err != nil {
		return types.StartSchedulerResult{}, err
	}
	_, err = a.Temporal.ExecuteWorkflow(ctx, c.Options.SchedulerStart(), temporal.SchedulerWorkflow, in)
	var already *serviceerror.WorkflowExecutionAlreadyStarted
	switch {
	case errors.As(err, &already):
		a.logger(in.ChainID).Info("scheduler already running; not started again")
		return types.StartSchedulerResult{AlreadyRunning: true}, nil
	case err != nil:
		return types.StartSchedulerResult{}, fmt.Errorf("chain %s: start scheduler: %w", in.ChainID, err)
	}
	span := chain.Span(in.Remaining)
	a.logger(in.ChainID).Info("scheduler started", zap.Uint64("from", span.From), zap.Uint64("to", span.To),
		zap.Uint64("heights", chain.TotalLen(in.Remaining)))
	a.Metrics.SchedulerActive.WithLabelValues(in.ChainID).Set(1)
	return types.StartSchedulerResult{Started: true}, nil
}

// CountIndexed returns, per range, how many heights are indexed.
func (a *Activities) CountIndexed(ctx context.Context, in types.CountIndexedInput) ([]uint64, error) {
	if _, err := a.chain(in.ChainID); err != nil {
		return nil, err
	}
	n, err := a.Store.CountIndexed(ctx, in.ChainID, in.Ranges)
	if err != nil {
		return nil, fmt.Errorf("chain %s: count indexed: %w", in.ChainID, err)
	}
	return n, nil
}

// MissingRanges lists the holes of a range as ascending ranges.
func (a *Activities) MissingRanges(ctx context.Context, in types.MissingInput) ([]chain.HeightRange, error) {
	if _, err := a.chain(in.ChainID); err != nil {
		return nil, err
	}
	rs, err := a.Store.MissingRanges(ctx, in.ChainID, in.Range.From, in.Range.To, in.Limit)
	if err != nil {
		return nil, fmt.Errorf("chain %s: missing ranges in [%d, %d]: %w", in.ChainID, in.Range.From, in.Range.To, err)
	}
	return rs, nil
}

// ReportScan publishes what a HeadScan saw, as metrics.
func (a *Activities) ReportScan(_ context.Context, chainID string, res types.HeadScanResult) error {
	if _, err := a.chain(chainID); err != nil {
		return err
	}
	for _, mode := range []string{types.ModeNormal, types.ModeCatchup} {
		v := 0.0
		if mode == res.Mode {
			v = 1
		}
		a.Metrics.HeadScanMode.WithLabelValues(chainID, mode).Set(v)
	}
	a.Metrics.HeadScanPending.WithLabelValues(chainID).Set(float64(res.Pending))
	return nil
}
