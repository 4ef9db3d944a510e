package api

import (
	"errors"
	"fmt"
	"net/http"

	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/storage"
)

// Error codes of the REST answers (the `error` field). Every error answer
// is `{"status", "error", "message"}`, plus `parameter` when one query or
// path parameter is to blame.
const (
	codeBadParameter = "bad_parameter" // 400
	codeNotFound     = "not_found"     // 404
	codeNotAllowed   = "method_not_allowed"
	codeUnauthorized = "unauthorized" // 401: no, an unknown or a revoked API key
	codeGone         = "gone"         // 410: at or below the pruned height
	codeRateLimited  = "rate_limited" // 429
	codeTimeout      = "timeout"      // 503: the request ran out of api.request_timeout
	codeUnavailable  = "unavailable"  // 503: data the answer needs is not there
	codeInternal     = "internal"     // 500: the database failed; never user input
)

// apiError is an answer other than 200. The message is for people and
// names what was wrong; code and parameter are for programs.
type apiError struct {
	Status    int    `json:"status"`
	Code      string `json:"error"`
	Parameter string `json:"parameter,omitempty"`
	Message   string `json:"message"`
	// cause is logged for 5xx answers, never sent.
	cause error
}

func (e *apiError) Error() string { return e.Message }

// badParam is a 400 naming the parameter; the message starts with its name.
func badParam(param, format string, args ...any) *apiError {
	return &apiError{Status: http.StatusBadRequest, Code: codeBadParameter, Parameter: param,
		Message: param + ": " + fmt.Sprintf(format, args...)}
}

func notFound(format string, args ...any) *apiError {
	return &apiError{Status: http.StatusNotFound, Code: codeNotFound, Message: fmt.Sprintf(format, args...)}
}

// gone is a 410 for a height retention removed on purpose.
func gone(param string, height, pruned uint64) *apiError {
	return &apiError{Status: http.StatusGone, Code: codeGone, Parameter: param,
		Message: fmt.Sprintf("height %d was pruned: this index keeps heights above %d only", height, pruned)}
}

func unavailable(format string, args ...any) *apiError {
	return &apiError{Status: http.StatusServiceUnavailable, Code: codeUnavailable, Message: fmt.Sprintf(format, args...)}
}

// fromStore turns a storage error into an answer: a read that ran out of
// time is a 503 the client may retry; anything else is a 500 whose detail
// goes to the log only (it may name hosts and tables).
func fromStore(err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	var te *storage.TimeoutError
	if errors.As(err, &te) {
		return &apiError{Status: http.StatusServiceUnavailable, Code: codeTimeout,
			Message: "the request took longer than api.request_timeout; narrow it or retry", cause: err}
	}
	return &apiError{Status: http.StatusInternalServerError, Code: codeInternal,
		Message: "the database could not answer; the API's log has the detail", cause: err}
}

// writeError sends e as JSON, logging the cause of server-side failures.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, e *apiError) {
	s.logFailure(r, e)
	if (e.Status == http.StatusTooManyRequests || e.Status == http.StatusServiceUnavailable) && w.Header().Get("Retry-After") == "" {
		w.Header().Set("Retry-After", "1")
	}
	writeJSON(w, e.Status, e)
}

// logFailure logs the cause of a server-side failure (the route pattern,
// not the path: that holds what the client asked for).
func (s *Server) logFailure(r *http.Request, e *apiError) {
	if e.Status >= 500 && e.cause != nil {
		s.log.Warn("request failed", zap.String("route", r.Pattern), zap.Int("status", e.Status),
			zap.String("key_id", keyIDOf(r.Context())), zap.String("error", s.redact(e.cause.Error())))
	}
}
