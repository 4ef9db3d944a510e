package worker

import (
	"context"
	"errors"
	"fmt"
	"net"

	"go.temporal.io/api/serviceerror"
)

// SlowDependencyError is a chain's start that failed because Temporal or
// ClickHouse did not answer in time or was unavailable: not the chain's
// settings, so the process waits for it (the chain is tried again with
// backoff) instead of exiting. On a loaded machine Temporal writes a
// Schedule late now and then; a worker that exited on it took its other
// chains down with it.
type SlowDependencyError struct {
	Service string // "temporal" or "clickhouse"
	Err     error
}

func (e *SlowDependencyError) Error() string {
	return fmt.Sprintf("%s slow or unavailable: %v", e.Service, e.Err)
}

func (e *SlowDependencyError) Unwrap() error { return e.Err }

// slowOr wraps err as a *SlowDependencyError of service when it is a
// timeout or an unavailable service, and returns it as it is otherwise
// (a refusal, a bad argument: those are the operator's to fix).
func slowOr(service string, err error) error {
	if err == nil || !slow(err) {
		return err
	}
	return &SlowDependencyError{Service: service, Err: err}
}

func slow(err error) bool {
	var (
		unavailable *serviceerror.Unavailable
		deadline    *serviceerror.DeadlineExceeded
		exhausted   *serviceerror.ResourceExhausted
		netErr      net.Error
	)
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &unavailable) || errors.As(err, &deadline) ||
		errors.As(err, &exhausted) || errors.As(err, &netErr)
}
