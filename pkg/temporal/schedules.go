package temporal

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	sdktemporal "go.temporal.io/sdk/temporal"
)

// PeriodicWorkflow describes a workflow a Temporal Schedule runs. Options
// builds them (HeadScanSchedule, GapScanSchedule).
type PeriodicWorkflow struct {
	ScheduleID string
	WorkflowID string
	Workflow   string
	TaskQueue  string
	Every      time.Duration
	Timeout    time.Duration
	Args       []any
	// SearchAttributes, Memo and Summary are set on every run the
	// Schedule starts.
	SearchAttributes sdktemporal.SearchAttributes
	Memo             map[string]any
	Summary          string
}

// EnsureSchedule creates the schedule or, if it exists, brings its interval
// and action up to date. Overlap policy is skip: a slow run is never stacked
// with the next one. A new schedule fires at once, so a fresh worker does
// not wait a whole period for its first scan.
func EnsureSchedule(ctx context.Context, c client.Client, p PeriodicWorkflow) error {
	action := &client.ScheduleWorkflowAction{
		ID:                       p.WorkflowID,
		Workflow:                 p.Workflow,
		TaskQueue:                p.TaskQueue,
		Args:                     p.Args,
		WorkflowExecutionTimeout: p.Timeout,
		TypedSearchAttributes:    p.SearchAttributes,
		Memo:                     p.Memo,
		StaticSummary:            p.Summary,
	}
	spec := client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: p.Every}}}
	_, err := c.ScheduleClient().Create(ctx, client.ScheduleOptions{
		ID:                 p.ScheduleID,
		Spec:               spec,
		Action:             action,
		Overlap:            enumspb.SCHEDULE_OVERLAP_POLICY_SKIP,
		TriggerImmediately: true,
	})
	if err == nil {
		return nil
	}
	if !errors.Is(err, sdktemporal.ErrScheduleAlreadyRunning) {
		return fmt.Errorf("create schedule %s: %w", p.ScheduleID, err)
	}
	h := c.ScheduleClient().GetHandle(ctx, p.ScheduleID)
	err = h.Update(ctx, client.ScheduleUpdateOptions{
		DoUpdate: func(in client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
			s := in.Description.Schedule
			s.Spec = &spec
			s.Action = action
			if s.Policy == nil {
				s.Policy = &client.SchedulePolicies{}
			}
			s.Policy.Overlap = enumspb.SCHEDULE_OVERLAP_POLICY_SKIP
			return &client.ScheduleUpdate{Schedule: &s}, nil
		},
	})
	if err != nil {
		return fmt.Errorf("update schedule %s: %w", p.ScheduleID, err)
	}
	return nil
}
