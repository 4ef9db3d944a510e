package rpc

import (
	"errors"
	"fmt"
)

// ErrBlockNotFound is returned when the node answers null for a block (or
// for the receipts of a block): the height is not produced yet, or the block
// was reorganised away between two calls. Callers match it with errors.Is.
var ErrBlockNotFound = errors.New("block not found")

// MalformedError reports an answer that cannot be stored as it is: bad hex,
// a missing required field, a block other than the one asked for, receipts
// or logs that do not belong to the block. It is never retried inside the
// client: asking the same node again gives the same answer, so the caller
// decides (another endpoint, an alert).
type MalformedError struct {
	Method   string // JSON-RPC method whose answer was wrong
	Endpoint string // endpoint name, never its URL
	Height   uint64 // height asked for (0 for eth_blockNumber)
	Field    string // JSON field at fault, e.g. "number", "transactions[3].hash"
	Reason   string
}

func (e *MalformedError) Error() string {
	return fmt.Sprintf("rpc endpoint %q: %s at height %d: malformed answer: field %s: %s",
		e.Endpoint, e.Method, e.Height, e.Field, e.Reason)
}

// TransientError is a failure that might have passed on another try
// (timeout, connection error, HTTP 429 or 5xx, JSON-RPC -32005) and still
// failed after the configured attempts, or whose context ended while
// retrying. Err is the last failure with the endpoint URL removed from its
// text; errors.Is(err, context.DeadlineExceeded) and friends still work.
type TransientError struct {
	Method     string
	Endpoint   string
	Attempts   int
	Code       int // JSON-RPC error code of the last failure, 0 if none
	HTTPStatus int // HTTP status of the last failure, 0 if none
	Err        error
}

func (e *TransientError) Error() string {
	return fmt.Sprintf("rpc endpoint %q: %s failed after %d attempt(s): %v",
		e.Endpoint, e.Method, e.Attempts, e.Err)
}

func (e *TransientError) Unwrap() error { return e.Err }

// RequestError is a failure that retrying would not fix: the node rejected
// the request (a JSON-RPC error such as -32602 invalid params, an HTTP 4xx
// other than 429) or the client could not be set up. Err has the endpoint
// URL removed from its text.
type RequestError struct {
	Method     string
	Endpoint   string
	Code       int // JSON-RPC error code, 0 if none
	HTTPStatus int // HTTP status, 0 if none
	Err        error
}

func (e *RequestError) Error() string {
	switch {
	case e.Code != 0:
		return fmt.Sprintf("rpc endpoint %q: %s: error %d: %v", e.Endpoint, e.Method, e.Code, e.Err)
	case e.HTTPStatus != 0:
		return fmt.Sprintf("rpc endpoint %q: %s: HTTP %d: %v", e.Endpoint, e.Method, e.HTTPStatus, e.Err)
	default:
		return fmt.Sprintf("rpc endpoint %q: %s: %v", e.Endpoint, e.Method, e.Err)
	}
}

func (e *RequestError) Unwrap() error { return e.Err }

// IsTransient reports whether err is a transient failure that exhausted its
// retries; the caller may try again later or elsewhere.
func IsTransient(err error) bool {
	var t *TransientError
	return errors.As(err, &t)
}

// cleanError stands in for an error whose text may contain the endpoint URL
// (net/http's *url.Error, go-ethereum's dial errors). Its text is redacted;
// Unwrap exposes the causes, with any *url.Error layer already peeled off,
// so that errors.Is/As keep working for context and net errors.
type cleanError struct {
	msg    string
	causes []error
}

func (e *cleanError) Error() string   { return e.msg }
func (e *cleanError) Unwrap() []error { return e.causes }
