package status

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/tideline-dev/tideline/pkg/temporal"
)

// Held is the height just above the watermark while its IndexBlock run
// keeps failing: the height that holds the chain's watermark (the watermark
// is contiguous, so it waits; every later height is indexed meanwhile).
// It is read from Temporal's record of the run's pending activity, so it
// is the same whichever worker runs the height.
type Held struct {
	Height uint64 `json:"height"`
	// Attempt is the activity's current attempt (1 is the first), and
	// Poisoned is true from temporal.PoisonAttempts on.
	Attempt  int32 `json:"attempt"`
	Poisoned bool  `json:"poisoned"`
	// Since is when the height's run started.
	Since time.Time `json:"since"`
	// Failure is what the last attempt's failure named (stage, type,
	// endpoint, method, field); Message is its text.
	Failure temporal.HeightFailure `json:"failure"`
	Message string                 `json:"message"`
}

// held reads the height's IndexBlock run: nil when it does not run, or
// runs without a failed attempt yet.
func held(ctx context.Context, tc client.Client, chainID string, height uint64) (*Held, error) {
	desc, err := describeRunning(ctx, tc, temporal.IndexBlockID(chainID, height))
	if desc == nil {
		return nil, err
	}
	for _, pa := range desc.GetPendingActivities() {
		last := pa.GetLastFailure()
		if last == nil {
			continue
		}
		h := &Held{
			Height: height, Attempt: pa.GetAttempt(), Poisoned: pa.GetAttempt() >= temporal.PoisonAttempts,
			Since: desc.GetWorkflowExecutionInfo().GetStartTime().AsTime(), Message: last.GetMessage(),
		}
		h.Failure.Type = last.GetApplicationFailureInfo().GetType()
		if d := last.GetApplicationFailureInfo().GetDetails(); d != nil {
			// Older workers' failures carry no details: the type and
			// message are still shown.
			_ = converter.GetDefaultDataConverter().FromPayloads(d, &h.Failure)
		}
		return h, nil
	}
	return nil, nil
}

// describe is one line for a person: the attempt, what failed and where.
func (h *Held) describe() string {
	f := h.Failure
	s := fmt.Sprintf("held at %d: attempt %d", h.Height, h.Attempt)
	if h.Poisoned {
		s += " (poisoned)"
	}
	if f.Type != "" {
		s += ", " + f.Type
	}
	if f.Endpoint != "" {
		s += fmt.Sprintf(" from endpoint %q", f.Endpoint)
	}
	if f.Method != "" {
		s += " " + f.Method
	}
	if f.Field != "" {
		s += fmt.Sprintf(", field %s: %s", f.Field, f.Reason)
	}
	return s
}
