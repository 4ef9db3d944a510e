package worker

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"go.temporal.io/api/serviceerror"
)

// A timeout or an unavailable service is waited for; a refusal is the
// operator's to fix and stays fatal for a chain of the config file.
func TestSlowDependencyIsToldFromARefusal(t *testing.T) {
	for _, tc := range []struct {
		err  error
		slow bool
	}{
		{fmt.Errorf("update schedule x:gapscan: %w", context.DeadlineExceeded), true},
		{serviceerror.NewUnavailable("frontend restarting"), true},
		{serviceerror.NewResourceExhausted(0, "busy"), true},
		{serviceerror.NewDeadlineExceeded("late"), true},
		{serviceerror.NewInvalidArgument("bad interval"), false},
		{serviceerror.NewPermissionDenied("no", ""), false},
		{errors.New("config: chains.x.endpoints: no endpoint configured"), false},
	} {
		err := slowOr("temporal", tc.err)
		var slow *SlowDependencyError
		if got := errors.As(err, &slow); got != tc.slow {
			t.Errorf("slowOr(%v): slow = %v, want %v", tc.err, got, tc.slow)
		}
		if !errors.Is(err, tc.err) {
			t.Errorf("slowOr(%v) lost the cause: %v", tc.err, err)
		}
	}
	if slowOr("clickhouse", nil) != nil {
		t.Error("slowOr(nil) is not nil")
	}
}
