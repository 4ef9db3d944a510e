package temporal

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
)

// Pausing a chain in Temporal: its Schedules (paused or unpaused) and its
// scheduler (the pause signal and the paused query). The order and the
// rule of when to signal are pkg/indexer/lifecycle's; these are the single
// calls. Every call is safe to repeat and to make from several processes
// at once: what is already as asked, or gone, is no error.

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

// SchedulesChange is what SetSchedulesPaused found and changed.
type SchedulesChange struct {
	Found   []string // the chain's Schedules that exist
	Changed []string // those of them it paused (or unpaused)
}

// SetSchedulesPaused pauses (or unpauses) the chain's Schedules: those
// already so are left, missing ones skipped. On an error the change says
// what was done before it.
func SetSchedulesPaused(ctx context.Context, c client.Client, chainID string, paused bool) (SchedulesChange, error) {
	var out SchedulesChange
	err := eachSchedule(ctx, c, chainID, func(id string, h client.ScheduleHandle, d *client.ScheduleDescription) error {
		out.Found = append(out.Found, id)
		if st := d.Schedule.State; st != nil && st.Paused == paused {
			return nil
		}
		var err error
		if paused {
			err = h.Pause(ctx, client.SchedulePauseOptions{Note: PauseNote})
		} else {
			err = h.Unpause(ctx, client.ScheduleUnpauseOptions{Note: "chain resumed (indexer chain resume)"})
		}
		if err != nil {
			return fmt.Errorf("temporal: pausing (%v) schedule %s: %w", paused, id, err)
		}
		out.Changed = append(out.Changed, id)
		return nil
	})
	return out, err
}

// SchedulesPaused reports how many of the chain's Schedules exist and how
// many of them are paused.
func SchedulesPaused(ctx context.Context, c client.Client, chainID string) (exist, paused int, err error) {
	err = eachSchedule(ctx, c, chainID, func(_ string, _ client.ScheduleHandle, d *client.ScheduleDescription) error {
		exist++
		if st := d.Schedule.State; st != nil && st.Paused {
			paused++
		}
		return nil
	})
	return exist, paused, err
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
