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
	return sdktemporal.NewApplicationErrorWithCause(msg, ErrTypeStorage, err)
}
