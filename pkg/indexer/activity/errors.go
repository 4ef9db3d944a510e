package activity

import (
	"errors"

	sdktemporal "go.temporal.io/sdk/temporal"

	"github.com/tideline-dev/tideline/pkg/rpc"
	"github.com/tideline-dev/tideline/pkg/temporal"
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

// fetchFailure types a failed fetch for Temporal, keeping the cause and,
// as the failure's details, what the node's answer got wrong.
func fetchFailure(msg string, err error) error { return failure(msg, fetchDetail(err), err) }

// writeFailure types a failed write for Temporal, keeping the cause.
func writeFailure(msg string, err error) error { return failure(msg, writeDetail(err), err) }

// fetchDetail names what failed in a fetch: the endpoint and method, and
// for a malformed answer the field and why.
func fetchDetail(err error) temporal.HeightFailure {
	d := temporal.HeightFailure{Stage: stageFetch, Type: ErrTypeRPC}
	var (
		malformed *rpc.MalformedError
		transient *rpc.TransientError
		request   *rpc.RequestError
	)
	switch {
	case errors.As(err, &malformed):
		d.Type, d.Endpoint, d.Method, d.Field, d.Reason = ErrTypeMalformedResponse, malformed.Endpoint, malformed.Method, malformed.Field, malformed.Reason
	case errors.Is(err, rpc.ErrBlockNotFound):
		d.Type = ErrTypeBlockNotFound
	case errors.As(err, &transient):
		d.Endpoint, d.Method = transient.Endpoint, transient.Method
	case errors.As(err, &request):
		d.Endpoint, d.Method = request.Endpoint, request.Method
	}
	return d
}

func writeDetail(err error) temporal.HeightFailure {
	d := temporal.HeightFailure{Stage: stageWrite, Type: ErrTypeStorage}
	if isHeld(err) {
		d.Type = ErrTypeChainHalted
	}
	return d
}

func failure(msg string, d temporal.HeightFailure, err error) error {
	return sdktemporal.NewApplicationErrorWithOptions(msg, d.Type, sdktemporal.ApplicationErrorOptions{Cause: err, Details: []any{d}})
}

// Stages of a failed write, for the index errors metric and the error type.
const (
	stageFetch = "fetch"
	stageWrite = "write"
	// stageHead counts (indexer_block_index_errors_total) a head whose
	// block the scans refused: no height above it is started.
	stageHead = "head"
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
