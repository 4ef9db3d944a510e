package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"

	gethrpc "github.com/ethereum/go-ethereum/rpc"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/internal/wait"
)

// failure is one failed attempt, classified.
type failure struct {
	transient bool
	malformed string // field to blame when the answer itself was unusable
	code      int
	status    int
	err       error // URL-free
}

// do runs attempt once the endpoint is known to serve the expected chain
// (chain_check.go), with the rate limiter, a per-attempt timeout, metrics
// and retries of transient failures: at most MaxAttempts attempts, the
// retry budget of every request (README: "One retry budget").
func (e *Ethereum) do(ctx context.Context, method string, height uint64, n int, attempt func(context.Context) error) error {
	_, err := e.attempts(ctx, method, height, n, true, e.cfg.MaxAttempts, attempt)
	return err
}

// attempts is do with at most budget attempts; it returns how many it
// made. checkChain false leaves out the chain check (for the check's own
// request).
func (e *Ethereum) attempts(ctx context.Context, method string, height uint64, n int, checkChain bool, budget int, attempt func(context.Context) error) (int, error) {
	return e.attemptsWithin(ctx, attemptLimits{timeout: e.cfg.Timeout}, method, height, n, checkChain, budget, attempt)
}

// attemptLimits are what differ between requests: the time one attempt
// may take, and whether a timeout ends the attempts at once with an
// *attemptTimeout (a request of several traces is split instead of being
// asked again whole: traces.go).
type attemptLimits struct {
	timeout        time.Duration
	splitOnTimeout bool
}

// attemptTimeout is the timeout of a request that splitOnTimeout let
// through: the caller splits the request.
type attemptTimeout struct{ err error }

func (e *attemptTimeout) Error() string { return e.err.Error() }
func (e *attemptTimeout) Unwrap() error { return e.err }

// attemptsWithin is attempts with the given limits.
func (e *Ethereum) attemptsWithin(ctx context.Context, lim attemptLimits, method string, height uint64, n int, checkChain bool, budget int, attempt func(context.Context) error) (int, error) {
	var last failure
	for i := 1; ; i++ {
		if checkChain {
			// Before a retry too: a failed attempt makes the check run
			// again (forgetChain below).
			if err := e.ensureChain(ctx); err != nil {
				return i - 1, err
			}
		}
		if err := e.wait(ctx, n); err != nil {
			return i - 1, e.giveUp(ctx, method, i-1, last, err)
		}
		actx, cancel := context.WithTimeout(ctx, lim.timeout)
		start := time.Now()
		err := attempt(actx)
		cancel()
		e.metrics.request(e.cfg.ChainID, e.cfg.EndpointName, method, n, time.Since(start))
		if err == nil {
			return i, nil
		}
		last = e.classify(ctx, err)
		timedOut := last.transient && errors.Is(last.err, context.DeadlineExceeded)
		if timedOut {
			last.err = &cleanError{msg: fmt.Sprintf("no answer within %v", lim.timeout), causes: []error{context.DeadlineExceeded}}
		}
		// Whatever failed, the endpoint may not be what it was.
		e.forgetChain()
		if ctx.Err() != nil {
			// The caller gave up; not the endpoint's fault, so not counted.
			return i, e.giveUp(ctx, method, i, last, nil)
		}
		switch {
		case last.malformed != "":
			return i, e.fail(method, decoder{method: method, endpoint: e.cfg.EndpointName, height: height}.malformed(last.malformed, "%v", last.err))
		case !last.transient:
			e.metrics.failure(e.cfg.ChainID, e.cfg.EndpointName, method, KindOther)
			return i, &RequestError{Method: method, Endpoint: e.cfg.EndpointName, Code: last.code, HTTPStatus: last.status, Err: last.err}
		}
		e.metrics.failure(e.cfg.ChainID, e.cfg.EndpointName, method, KindTransient)
		if timedOut && lim.splitOnTimeout && i < budget {
			e.log.Debug("rpc request timed out; splitting it", zap.String("method", method), zap.Uint64("height", height),
				zap.Int("calls", n), zap.Error(last.err))
			return i, &attemptTimeout{&TransientError{Method: method, Endpoint: e.cfg.EndpointName, Attempts: i, Err: last.err}}
		}
		if i >= budget {
			return i, e.giveUp(ctx, method, i, last, nil)
		}
		backoff := e.backoff(i)
		e.log.Debug("retrying rpc request", zap.String("method", method), zap.Uint64("height", height),
			zap.Int("attempt", i), zap.Duration("wait", backoff), zap.Error(last.err))
		if err := wait.For(ctx, backoff); err != nil {
			return i, e.giveUp(ctx, method, i, last, err)
		}
	}
}

// giveUp builds the TransientError for a request that ends without success;
// stopErr is why no further attempt is made when it is not the last
// failure itself (the context ended while waiting).
func (e *Ethereum) giveUp(ctx context.Context, method string, attempts int, last failure, stopErr error) error {
	err := last.err
	switch {
	case err == nil && stopErr != nil:
		err = stopErr
	case stopErr != nil:
		err = &cleanError{msg: fmt.Sprintf("%v (last failure: %v)", stopErr, last.err), causes: []error{stopErr, last.err}}
	}
	if err == nil {
		err = ctx.Err()
	}
	level := zap.WarnLevel
	if ctx.Err() != nil {
		// The caller stopped waiting; nothing is wrong with the endpoint.
		level = zap.DebugLevel
	}
	e.log.Log(level, "rpc request failed", zap.String("method", method), zap.Int("attempts", attempts), zap.Error(err))
	return &TransientError{Method: method, Endpoint: e.cfg.EndpointName, Attempts: attempts,
		Code: last.code, HTTPStatus: last.status, Err: err}
}

func (e *Ethereum) wait(ctx context.Context, n int) error {
	if e.limiter == nil {
		return nil
	}
	// WaitN refuses n above the burst, so a large batch waits in slices.
	for n > 0 {
		k := min(n, e.cfg.Burst)
		if err := e.limiter.WaitN(ctx, k); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			// The limiter saw the wait would outlast the deadline.
			return context.DeadlineExceeded
		}
		n -= k
	}
	return nil
}

func (e *Ethereum) backoff(attempt int) time.Duration {
	d := e.cfg.BackoffInitial
	for i := 1; i < attempt && d < e.cfg.BackoffMax; i++ {
		d *= 2
	}
	d = min(d, e.cfg.BackoffMax)
	return time.Duration(rand.Int64N(int64(d)) + 1)
}

// classify decides whether a failed attempt is worth retrying. ctx is the
// caller's context: a deadline of the attempt's own timeout is transient,
// the caller's end is not retried (do checks ctx.Err()).
func (e *Ethereum) classify(ctx context.Context, err error) failure {
	f := failure{err: e.clean(err)}
	var rpcErr gethrpc.Error
	var httpErr gethrpc.HTTPError
	var netErr net.Error
	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	var scanErr *syntaxError
	switch {
	case errors.As(err, &httpErr):
		f.status = httpErr.StatusCode
		f.transient = httpErr.StatusCode == http.StatusTooManyRequests ||
			httpErr.StatusCode == http.StatusRequestTimeout || httpErr.StatusCode >= 500
		f.err = &cleanError{msg: e.redact.clean(httpStatusText(httpErr)), causes: []error{e.safeCause(httpErr)}}
	case errors.As(err, &rpcErr):
		f.code = rpcErr.ErrorCode()
		// -32005: "limit exceeded" (EIP-1474), what providers send when
		// throttling over a 200 response.
		f.transient = f.code == -32005
	case errors.Is(err, gethrpc.ErrNoResult):
		f.malformed = "result"
	case errors.Is(err, gethrpc.ErrMissingBatchResponse):
		f.malformed = "batch"
	case errors.Is(err, ErrResponseTooLarge):
		f.malformed = "response size"
	case errors.As(err, &syntaxErr), errors.As(err, &typeErr), errors.As(err, &scanErr):
		f.malformed = "response"
	case errors.Is(err, gethrpc.ErrClientQuit):
		f.transient = false
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		f.transient = ctx.Err() == nil
		if f.transient {
			// attemptsWithin names the attempt's own limit.
			f.err = &cleanError{msg: "no answer in time", causes: []error{context.DeadlineExceeded}}
		}
	case errors.As(err, &netErr), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, net.ErrClosed):
		f.transient = true
	default:
		// go-ethereum reports lost websocket connections with unexported
		// errors; anything that is not an answer from the node is a
		// transport problem, and retries are bounded anyway.
		f.transient = true
	}
	return f
}

func httpStatusText(e gethrpc.HTTPError) string {
	body := strings.TrimSpace(string(e.Body))
	if len(body) > 200 {
		body = body[:200] + "..."
	}
	if body == "" {
		return e.Status
	}
	return e.Status + ": " + body
}
