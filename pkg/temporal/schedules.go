package temporal

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
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
	// TaskTimeout is each run's workflow task timeout; 0 leaves the
	// server's (10 s).
	TaskTimeout time.Duration
	Args        []any
	// SearchAttributes, Memo and Summary are set on every run the
	// Schedule starts.
	SearchAttributes sdktemporal.SearchAttributes
	Memo             map[string]any
	Summary          string
	// Paused creates the Schedule paused (a paused chain's); an existing
	// Schedule keeps its state (SetSchedulesPaused changes it).
	Paused bool
	// Overlap is the policy for a run due while one is under way: skip
	// when unset.
	Overlap enumspb.ScheduleOverlapPolicy
}

func (p PeriodicWorkflow) overlap() enumspb.ScheduleOverlapPolicy {
	if p.Overlap == enumspb.SCHEDULE_OVERLAP_POLICY_UNSPECIFIED {
		return enumspb.SCHEDULE_OVERLAP_POLICY_SKIP
	}
	return p.Overlap
}

// EnsureSchedule creates the schedule or, if it exists, brings its interval,
// action and overlap policy up to date. Overlap policy is skip unless the
// workflow says otherwise: a slow run is never stacked with the next one.
// A new schedule fires at once (unless created paused), so a fresh worker
// does not wait a whole period for its first scan.
func EnsureSchedule(ctx context.Context, c client.Client, p PeriodicWorkflow) error {
	action := &client.ScheduleWorkflowAction{
		ID:                       p.WorkflowID,
		Workflow:                 p.Workflow,
		TaskQueue:                p.TaskQueue,
		Args:                     p.Args,
		WorkflowExecutionTimeout: p.Timeout,
		WorkflowTaskTimeout:      p.TaskTimeout,
		TypedSearchAttributes:    p.SearchAttributes,
		Memo:                     p.Memo,
		StaticSummary:            p.Summary,
	}
	spec := client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: p.Every}}}
	_, err := c.ScheduleClient().Create(ctx, client.ScheduleOptions{
		ID:                 p.ScheduleID,
		Spec:               spec,
		Action:             action,
		Overlap:            p.overlap(),
		TriggerImmediately: !p.Paused,
		Paused:             p.Paused,
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
			s.Policy.Overlap = p.overlap()
			return &client.ScheduleUpdate{Schedule: &s}, nil
		},
	})
	if err != nil {
		return fmt.Errorf("update schedule %s: %w", p.ScheduleID, err)
	}
	return nil
}

// TriggerSchedule runs the schedule's workflow now, once (overlap buffer
// one: a run in progress is followed by one more, not stacked): a resumed
// chain scans at once instead of at its next interval.
func TriggerSchedule(ctx context.Context, c client.Client, scheduleID string) error {
	err := c.ScheduleClient().GetHandle(ctx, scheduleID).Trigger(ctx, client.ScheduleTriggerOptions{
		Overlap: enumspb.SCHEDULE_OVERLAP_POLICY_BUFFER_ONE,
	})
	if err != nil {
		return fmt.Errorf("trigger schedule %s: %w", scheduleID, err)
	}
	return nil
}

// DeleteSchedule deletes a Schedule if it exists (a chain whose retention
// was turned off loses its Prune Schedule); deleted tells whether it did.
func DeleteSchedule(ctx context.Context, c client.Client, scheduleID string) (deleted bool, err error) {
	err = c.ScheduleClient().GetHandle(ctx, scheduleID).Delete(ctx)
	var notFound *serviceerror.NotFound
	switch {
	case errors.As(err, &notFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("delete schedule %s: %w", scheduleID, err)
	}
	return true, nil
}

// eachSchedule calls fn with the handle and description of each of the
// chain's Schedules that exists (ScheduleIDs), in order; missing ones are
// skipped. The first error stops it.
func eachSchedule(ctx context.Context, c client.Client, chainID string,
	fn func(id string, h client.ScheduleHandle, d *client.ScheduleDescription) error) error {
	for _, id := range ScheduleIDs(chainID) {
		h := c.ScheduleClient().GetHandle(ctx, id)
		d, err := h.Describe(ctx)
		var notFound *serviceerror.NotFound
		if errors.As(err, &notFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("temporal: describing schedule %s: %w", id, err)
		}
		if err := fn(id, h, d); err != nil {
			return err
		}
	}
	return nil
}
