package activity

import (
	"errors"

	sdktemporal "go.temporal.io/sdk/temporal"

	"github.com/tideline-dev/tideline/pkg/rpc"
)

// Application error types of IndexBlock failures. Temporal keeps the type
// with each failed attempt (the Web UI shows it, and the history's last
// failure carries it), so operators and tests tell a malformed answer from
// an unreachable node without reading messages. All of them are retried.
const (
	ErrTypeMalformedResponse = "MalformedResponse"
	ErrTypeBlockNotFound     = "BlockNotFound"
	ErrTypeRPC               = "RPCError"
	ErrTypeStorage           = "StorageError"
)

// fetchFailure types a failed fetch for Temporal, keeping the cause.
func fetchFailure(msg string, err error) error {
	var malformed *rpc.MalformedError
	switch {
	case errors.As(err, &malformed):
		return sdktemporal.NewApplicationErrorWithCause(msg, ErrTypeMalformedResponse, err)
	case errors.Is(err, rpc.ErrBlockNotFound):
		return sdktemporal.NewApplicationErrorWithCause(msg, ErrTypeBlockNotFound, err)
	default:
		return sdktemporal.NewApplicationErrorWithCause(msg, ErrTypeRPC, err)
	}
}

// writeFailure types a failed write for Temporal, keeping the cause.
func writeFailure(msg string, err error) error {
	if isHeld(err) {
		return sdktemporal.NewApplicationErrorWithCause(msg, ErrTypeChainHalted, err)
	}
	return sdktemporal.NewApplicationErrorWithCause(msg, ErrTypeStorage, err)
}

// Stages of a failed write, for the index errors metric and the error type.
const (
	stageFetch = "fetch"
	stageWrite = "write"
)

// stageError says which stage of writeChecked failed.
type stageError struct {
	stage string
	err   error
}

func (e *stageError) Error() string { return e.err.Error() }
func (e *stageError) Unwrap() error { return e.err }

func fetchErr(err error) error {
	if err == nil {
		return nil
	}
	return &stageError{stageFetch, err}
}

func writeErr(err error) error {
	if err == nil {
		return nil
	}
	return &stageError{stageWrite, err}
}
