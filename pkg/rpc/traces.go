package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/internal/wait"
	"github.com/tideline-dev/tideline/pkg/chaindata"
)

// Call traces: every call frame of every transaction, from the node's
// tracer (trace_decode.go maps the answers). A chain with tracing on asks
// for a height's trace in the same JSON-RPC batch as its block and
// receipts (FetchBlocks), or right after them for one height (Traces), so
// that a height is complete, and written, only with its traces.
//
// A trace of a full block can be tens of megabytes and take the node
// seconds, so the requests that carry traces have their own limits
// (TraceConfig): fewer heights per request, fewer requests in flight, a
// longer timeout and a larger answer. A request of several heights that
// times out is split in halves rather than asked again whole, as an answer
// too large is, so that one slow trace ends up alone and the other heights
// come back; the slow one fails with a *TransientError once its budget is
// spent, and its caller isolates it (the range hands it to its own
// IndexBlock workflow).
//
// An endpoint that answers that it lacks the tracer's method cannot trace:
// it is skipped for traces only (Multi; CanTrace is false for
// traceRecheck, then it is asked again), shown by rpc_endpoint_traces 0
// and a log line; it still serves heads, blocks and receipts.

// TraceMode is how a node is asked for call traces.
type TraceMode string

const (
	// TracesOff asks for none.
	TracesOff TraceMode = ""
	// TracesDebug asks debug_traceBlockByNumber with the callTracer
	// (geth, reth, anvil).
	TracesDebug TraceMode = "debug"
	// TracesParity asks trace_block (erigon, nethermind, reth, anvil).
	TracesParity TraceMode = "parity"
)

// Methods of the two tracers.
const (
	methodDebugTrace  = "debug_traceBlockByNumber"
	methodParityTrace = "trace_block"
)

// TraceConfig is an endpoint's tracing and the limits of the requests that
// carry traces. Zero values take the defaults.
type TraceConfig struct {
	Mode TraceMode
	// Batch is how many heights one request carrying traces asks for
	// (each height: block, receipts and trace). Default 10.
	Batch int
	// Concurrency caps the requests carrying traces in flight per
	// FetchBlocks call. Default 2.
	Concurrency int
	// Timeout is the time one attempt of a request carrying traces may
	// take; it is also given to the node's tracer. Default 60s.
	Timeout time.Duration
	// MaxResponseBytes caps an answer carrying traces. Default 1 GiB.
	MaxResponseBytes int64
}

func (c *TraceConfig) setDefaults() {
	if c.Batch <= 0 {
		c.Batch = 10
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 2
	}
	if c.Timeout <= 0 {
		c.Timeout = time.Minute
	}
	if c.MaxResponseBytes <= 0 {
		c.MaxResponseBytes = 1 << 30
	}
}

// traceRecheck is how long an endpoint that said it cannot trace is
// skipped for traces before it is asked again (a node restarted with the
// debug API enabled traces again).
const traceRecheck = 10 * time.Minute

// traceState is one endpoint's tracing, changed while it runs: its mode
// (set again once `auto` is resolved) and when it last said it cannot
// trace (unix nanoseconds, 0: never).
type traceState struct {
	mode       atomic.Value // string (a TraceMode)
	unableAt   atomic.Int64
	unableOnce atomic.Bool // the log line and metric of the current episode
}

// Tracer is a Client that can read call traces.
type Tracer interface {
	Client
	// TraceMode is how traces are asked (TracesOff: never).
	TraceMode() TraceMode
	// Traces fills data.Traces and sets data.Traced for the block in
	// data (whose transactions are set), checked against it.
	Traces(ctx context.Context, data *chaindata.BlockData) error
}

var (
	_ Tracer = (*Ethereum)(nil)
	_ Tracer = (*Multi)(nil)
)

// TraceMode is the endpoint's tracing mode.
func (e *Ethereum) TraceMode() TraceMode { return e.tracing() }

func (e *Ethereum) tracing() TraceMode {
	m, _ := e.traces.mode.Load().(string)
	return TraceMode(m)
}

// SetTraceMode changes how the endpoint is asked for traces (once `auto`
// is resolved; see ResolveTraces).
func (e *Ethereum) SetTraceMode(m TraceMode) { e.traces.mode.Store(string(m)) }

// CanTrace is false while the endpoint is known to lack its tracer's
// method (for traceRecheck after it said so).
func (e *Ethereum) CanTrace() bool {
	at := e.traces.unableAt.Load()
	return at == 0 || time.Since(time.Unix(0, at)) >= traceRecheck
}

// unableToTrace records that the endpoint lacks the tracer's method.
func (e *Ethereum) unableToTrace(method string, err error) {
	e.traces.unableAt.Store(time.Now().UnixNano())
	e.metrics.endpointTraces(e.cfg.ChainID, e.cfg.EndpointName, false)
	if !e.traces.unableOnce.Swap(true) {
		e.log.Warn("rpc endpoint cannot trace: skipped for traces, still used for heads, blocks and receipts; asked again in "+traceRecheck.String(),
			zap.String("method", method), zap.Error(err))
	}
}

// ableToTrace records a trace answered.
func (e *Ethereum) ableToTrace() {
	if e.traces.unableAt.Swap(0) != 0 || e.traces.unableOnce.Swap(false) {
		e.log.Info("rpc endpoint traces again")
	}
	e.metrics.endpointTraces(e.cfg.ChainID, e.cfg.EndpointName, true)
}

// TracesUnsupportedError is a trace asked of an endpoint that lacks the
// tracer's method. Multi asks another endpoint.
type TracesUnsupportedError struct {
	Endpoint string
	Method   string
	Err      error
}

func (e *TracesUnsupportedError) Error() string {
	return fmt.Sprintf("rpc endpoint %q cannot trace (%s): %v", e.Endpoint, e.Method, e.Err)
}

func (e *TracesUnsupportedError) Unwrap() error { return e.Err }

// traceCall is the call asking mode's tracer for the block at q (a hex
// height).
func (e *Ethereum) traceCall(mode TraceMode, q string) (string, []any) {
	if mode == TracesParity {
		return methodParityTrace, []any{q}
	}
	return methodDebugTrace, []any{q, map[string]any{
		"tracer": "callTracer",
		// The node's own limit per transaction (geth: 5 s by default)
		// would fail a long trace before ours does.
		"timeout": e.cfg.Traces.Timeout.String(),
	}}
}

// requestLimits are the limits of a FetchBlocks request of n heights: a
// request carrying traces has the traces' (split on a timeout when it has
// more than one height).
func (e *Ethereum) requestLimits(mode TraceMode, n int) requestLimits {
	if mode == TracesOff {
		return requestLimits{attemptLimits: attemptLimits{timeout: e.cfg.Timeout}, method: batchMethod, http: e.httpClient}
	}
	http := e.traceHTTP
	if e.httpClient == nil {
		http = nil // a websocket: go-ethereum's client sends it
	}
	return requestLimits{
		attemptLimits: attemptLimits{timeout: e.cfg.Traces.Timeout, splitOnTimeout: n > 1},
		method:        batchMethod + "+" + traceMethodOf(mode),
		http:          http,
	}
}

func traceMethodOf(mode TraceMode) string {
	if mode == TracesParity {
		return methodParityTrace
	}
	return methodDebugTrace
}

// traceResults applies the trace answers of a FetchBlocks request (the
// last of per calls of each height) to the heights whose block and
// receipts came back, and returns retry with the heights whose trace
// failed transiently added.
// With tracesOnly the blocks are the caller's (FetchTraces): a failed
// trace leaves them and sets only Err. known is what the walk that
// checked the answer recorded (json_spans.go; nil: none).
func (e *Ethereum) traceResults(ctx context.Context, mode TraceMode, rs []*BlockResult, per int,
	results []json.RawMessage, errs []error, known *spans, retry []retryable, tracesOnly bool) []retryable {
	for i, r := range rs {
		if r.Data == nil || (r.Data.Traced && !tracesOnly) {
			continue // failed or asked again already, or an empty block
		}
		r.Err = nil
		k := per*i + per - 1
		again, err := e.traceResult(ctx, mode, r.Data, results[k], errs[k], known)
		switch {
		case again != nil:
			if !tracesOnly {
				r.Data = nil
			}
			retry = append(retry, retryable{r, traceMethodOf(mode), *again})
		case err != nil && tracesOnly:
			r.Err = err
		case err != nil:
			r.Data, r.Err = nil, err
		}
	}
	return retry
}

// FetchTraces reads the traces of blocks already known, their hash and
// transactions set (the backfill of a chain indexed without traces), in
// requests of traces only with the traces' limits, checked against each
// block as FetchBlocks checks them. The error of each block is at its
// index (nil: its Traces are set, and Traced).
func (e *Ethereum) FetchTraces(ctx context.Context, blocks []*chaindata.BlockData) []error {
	out := make([]BlockResult, len(blocks))
	for i, d := range blocks {
		d.Traced = false
		out[i] = BlockResult{Height: d.Block.Number, Data: d}
	}
	e.fetchAll(ctx, out, true)
	errs := make([]error, len(out))
	for i, r := range out {
		errs[i] = r.Err
		if r.Err == nil && !blocks[i].Traced {
			errs[i] = fmt.Errorf("rpc endpoint %q: block %d: no trace came back", e.cfg.EndpointName, r.Height)
		}
	}
	return errs
}

// traceResult applies one trace answer to data (Traces, Traced), or
// returns the error Traces would give; again is set when the trace failed
// transiently and should be asked again. Its frames, nested objects, are
// each walked once when known records the answer's checking walk.
func (e *Ethereum) traceResult(ctx context.Context, mode TraceMode, data *chaindata.BlockData, raw json.RawMessage, callErr error, known *spans) (*failure, error) {
	method := traceMethodOf(mode)
	height := data.Block.Number
	if len(data.Transactions) == 0 {
		// Nothing to trace; geth cannot even trace the genesis block.
		data.Traces, data.Traced = nil, true
		return nil, nil
	}
	if callErr != nil {
		if f := e.classify(ctx, callErr); !f.transient && f.malformed == "" {
			if err := (&RequestError{Code: f.code, Err: f.err}); unsupported(err) {
				e.unableToTrace(method, err)
				e.metrics.failure(e.cfg.ChainID, e.cfg.EndpointName, method, KindOther)
				return nil, &TracesUnsupportedError{Endpoint: e.cfg.EndpointName, Method: method, Err: f.err}
			}
		}
		return e.callFailure(ctx, method, height, callErr)
	}
	if isNull(raw) {
		return nil, e.fail(method, fmt.Errorf("rpc endpoint %q: trace of block %d %s: %w",
			e.cfg.EndpointName, height, data.Block.Hash, ErrBlockNotFound))
	}
	d := decoder{method: method, endpoint: e.cfg.EndpointName, height: height, known: known}
	var traces []chaindata.Trace
	var err error
	if mode == TracesParity {
		traces, err = d.decodeParityTraces(data, raw)
	} else {
		var failed string
		var kept Incomplete
		traces, failed, kept, err = d.decodeCallTraces(data, raw)
		for reason, n := range kept {
			e.metrics.incomplete(e.cfg.ChainID, e.cfg.EndpointName, method, reason, n)
		}
		if failed != "" {
			// The node could not trace a transaction (its own timeout):
			// another try may succeed.
			e.metrics.failure(e.cfg.ChainID, e.cfg.EndpointName, method, KindTransient)
			return &failure{transient: true, err: errors.New("the node could not trace " + failed)}, nil
		}
	}
	if err != nil {
		return nil, e.fail(method, err)
	}
	e.ableToTrace()
	data.Traces, data.Traced = traces, true
	return nil, nil
}

// Traces reads the traces of data's block (its transactions set) with one
// request, checked against the block like the batch's, within one budget
// of MaxAttempts attempts.
func (e *Ethereum) Traces(ctx context.Context, data *chaindata.BlockData) error {
	mode := e.tracing()
	if mode == TracesOff {
		return fmt.Errorf("rpc endpoint %q: traces asked, but tracing is off", e.cfg.EndpointName)
	}
	if len(data.Transactions) == 0 {
		data.Traces, data.Traced = nil, true
		return nil
	}
	height := data.Block.Number
	m, a := e.traceCall(mode, "0x"+strconv.FormatUint(height, 16))
	methods, args := []string{m}, [][]any{a}
	lim := e.requestLimits(mode, 1)
	lim.method = m
	var last failure
	for used := 0; used < e.cfg.MaxAttempts; {
		n, results, errs, known, err := e.batchCallsWithin(ctx, lim, height, e.cfg.MaxAttempts-used, methods, args)
		used += n
		if err != nil {
			return err
		}
		again, err := e.traceResult(ctx, mode, data, results[0], errs[0], known)
		if again == nil {
			return err
		}
		last = *again
		if used >= e.cfg.MaxAttempts {
			break
		}
		if err := wait.For(ctx, e.backoff(used)); err != nil {
			return e.giveUp(ctx, m, used, last, err)
		}
	}
	return e.giveUp(ctx, m, e.cfg.MaxAttempts, last, nil)
}
