package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"

	gethrpc "github.com/ethereum/go-ethereum/rpc"
	"github.com/tideline-dev/tideline/internal/wait"
	"github.com/tideline-dev/tideline/pkg/chaindata"
	"go.uber.org/zap"
)

// Reading many heights at once, for range indexing of the backlog: one
// JSON-RPC batch carries eth_getBlockByNumber(h, true) and
// eth_getBlockReceipts(h) for many heights, so that a range costs a few
// HTTP requests instead of two per height.

// BlockResult is one height of a FetchBlocks answer: Data, or Err, the
// error FetchBlock would have returned for that height alone
// (ErrBlockNotFound, *MalformedError, *TransientError, ...; match with
// errors.Is/As).
type BlockResult struct {
	Height uint64
	Data   *chaindata.BlockData
	Err    error
}

// BatchClient is a Client that reads many heights per request.
type BatchClient interface {
	Client
	// FetchBlocks reads each height completely, as FetchBlock does, and
	// returns one result per height in the order given. One height's
	// failure never fails the others.
	FetchBlocks(ctx context.Context, heights []uint64) []BlockResult
}

var (
	_ BatchClient = (*Ethereum)(nil)
	_ BatchClient = (*Multi)(nil)
)

// fetchConcurrency bounds the heights FetchBlocks reads at once from a
// Client that has no batch method.
const fetchConcurrency = 8

// FetchBlocks reads heights completely with c's batch method if it has one,
// else with FetchBlock, a few heights at a time. Results are in the order
// of heights.
func FetchBlocks(ctx context.Context, c Client, heights []uint64) []BlockResult {
	if bc, ok := c.(BatchClient); ok {
		return bc.FetchBlocks(ctx, heights)
	}
	out := make([]BlockResult, len(heights))
	sem := make(chan struct{}, fetchConcurrency)
	var wg sync.WaitGroup
	for i, h := range heights {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			data, err := FetchBlock(ctx, c, h)
			out[i] = BlockResult{Height: h, Data: data, Err: err}
		})
	}
	wg.Wait()
	return out
}

// batchMethod labels the metrics of a block-and-receipts batch request.
const batchMethod = "eth_getBlockByNumber+eth_getBlockReceipts"

// FetchBlocks reads heights in JSON-RPC batches of block and receipts
// calls, FetchBatch heights per request and at most FetchConcurrency
// requests at once. Every call counts against the rate limit. A request
// that fails at the transport level (timeout, connection error, HTTP
// 429/5xx) is retried whole; a call's own transient error (-32005) is
// asked again in a later request with the other heights still pending.
// Both draw on one budget of MaxAttempts attempts per height, as any
// request has. An answer too large for MaxResponseBytes is split in
// halves. Nodes without eth_getBlockReceipts get the per-transaction
// fallback, as in Receipts.
func (e *Ethereum) FetchBlocks(ctx context.Context, heights []uint64) []BlockResult {
	out := make([]BlockResult, len(heights))
	for i, h := range heights {
		out[i].Height = h
	}
	e.fetchAll(ctx, out, false)
	return out
}

// fetchAll fills out (heights set; with tracesOnly, blocks set too and
// only their traces asked) in requests of the right size, a few at once.
func (e *Ethereum) fetchAll(ctx context.Context, out []BlockResult, tracesOnly bool) {
	perRequest, concurrency := e.cfg.FetchBatch, e.cfg.FetchConcurrency
	if e.tracing() != TracesOff {
		// Requests that carry traces have the traces' limits (traces.go).
		perRequest, concurrency = min(perRequest, e.cfg.Traces.Batch), e.cfg.Traces.Concurrency
	}
	sem := make(chan struct{}, concurrency)
	var wg sync.WaitGroup
	for start := 0; start < len(out); start += perRequest {
		chunk := out[start:min(start+perRequest, len(out))]
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			for i := range chunk {
				chunk[i].Err = &TransientError{Method: batchMethod, Endpoint: e.cfg.EndpointName, Err: ctx.Err()}
			}
			continue
		}
		wg.Go(func() {
			defer func() { <-sem }()
			e.fetchChunk(ctx, chunk, tracesOnly)
		})
	}
	wg.Wait()
}

// fetchChunk fills the results of one request's heights, asking again the
// heights whose calls failed transiently, within the heights' budget of
// MaxAttempts attempts (the request's own retries count against it too).
func (e *Ethereum) fetchChunk(ctx context.Context, chunk []BlockResult, tracesOnly bool) {
	pending := make([]*BlockResult, len(chunk))
	for i := range chunk {
		pending[i] = &chunk[i]
	}
	used := 0
	for len(pending) > 0 {
		retry, n := e.fetchOnce(ctx, pending, e.cfg.MaxAttempts-used, tracesOnly)
		used += n
		if len(retry) == 0 {
			return
		}
		if used >= e.cfg.MaxAttempts || ctx.Err() != nil {
			for _, r := range retry {
				r.Err = e.giveUp(ctx, r.retryMethod, used, r.retryFailure, nil)
			}
			return
		}
		pending = pending[:0]
		for _, r := range retry {
			pending = append(pending, r.BlockResult)
		}
		if err := wait.For(ctx, e.backoff(used)); err != nil {
			for _, r := range retry {
				r.Err = e.giveUp(ctx, r.retryMethod, used, r.retryFailure, err)
			}
			return
		}
	}
}

// retryable is a height whose call failed transiently in a batch.
type retryable struct {
	*BlockResult
	retryMethod  string
	retryFailure failure
}

// fetchOnce sends one batch for rs (split if the answer is too large),
// with at most budget attempts, and fills each result, except those
// returned to be asked again. used is the attempts a height took at most.
func (e *Ethereum) fetchOnce(ctx context.Context, rs []*BlockResult, budget int, tracesOnly bool) (retry []retryable, used int) {
	withReceipts := !e.noBlockReceipts.Load() && !tracesOnly
	mode := e.tracing()
	per := 1
	if withReceipts {
		per = 2
	}
	if tracesOnly {
		per = 0
	}
	if mode != TracesOff {
		per++ // the trace is the height's last call
	}
	args := make([][]any, 0, per*len(rs))
	methods := make([]string, 0, per*len(rs))
	for _, r := range rs {
		q := "0x" + strconv.FormatUint(r.Height, 16)
		if !tracesOnly {
			args = append(args, []any{q, true})
			methods = append(methods, "eth_getBlockByNumber")
		}
		if withReceipts {
			args = append(args, []any{q})
			methods = append(methods, "eth_getBlockReceipts")
		}
		if mode != TracesOff {
			m, a := e.traceCall(mode, q)
			args = append(args, a)
			methods = append(methods, m)
		}
	}
	if e.cfg.ExpectedChainID != 0 {
		// The blocks come with the chain they are from (chain_check.go).
		args = append(args, []any{})
		methods = append(methods, methodChainID)
	}
	used, results, errs, known, err := e.batchCallsWithin(ctx, e.requestLimits(mode, len(rs)), rs[0].Height, budget, methods, args)
	if err == nil && e.cfg.ExpectedChainID != 0 {
		last := len(methods) - 1
		err = e.judgeChainID(ctx, results[last], errs[last])
	}
	if err != nil {
		var split *splitError
		var timeout *attemptTimeout
		if errors.As(err, &timeout) && len(rs) > 1 && budget > used {
			// One slow trace holds the whole request: halves isolate it.
			half := len(rs) / 2
			low, n := e.fetchOnce(ctx, rs[:half], budget-used, tracesOnly)
			high, m := e.fetchOnce(ctx, rs[half:], budget-used, tracesOnly)
			return append(low, high...), used + max(n, m)
		}
		if errors.As(err, &split) {
			if len(rs) > 1 && budget > used {
				// One answer cannot carry these heights: two may.
				half := len(rs) / 2
				low, n := e.fetchOnce(ctx, rs[:half], budget-used, tracesOnly)
				high, m := e.fetchOnce(ctx, rs[half:], budget-used, tracesOnly)
				return append(low, high...), used + max(n, m)
			}
			err = split.err // what a single height gets
		}
		for _, r := range rs {
			if !tracesOnly {
				r.Data = nil
			}
			r.Err = err
		}
		return nil, used
	}
	if tracesOnly {
		return e.traceResults(ctx, mode, rs, per, results, errs, known, nil, true), used
	}
	var fallback []*BlockResult
	for i, r := range rs {
		k := per * i
		r.Data, r.Err = nil, nil
		data, again, err := e.blockResult(ctx, r.Height, results[k], errs[k], known)
		if again != nil {
			retry = append(retry, retryable{r, "eth_getBlockByNumber", *again})
			continue
		}
		if err != nil {
			r.Err = err
			continue
		}
		if len(data.Transactions) == 0 {
			// As Receipts: an empty block needs no receipts, nor traces.
			data.Logs = nil
			data.Block.LogCount = 0
			data.Traced = mode != TracesOff
			r.Data = data
			continue
		}
		if !withReceipts {
			fallback = append(fallback, r)
			r.Data = data
			continue
		}
		again, err = e.receiptsResult(ctx, data, results[k+1], errs[k+1], known)
		switch {
		case again != nil:
			retry = append(retry, retryable{r, "eth_getBlockReceipts", *again})
		case err != nil && unsupported(err):
			if !e.noBlockReceipts.Swap(true) {
				e.log.Info("node lacks eth_getBlockReceipts; fetching receipts one transaction at a time", zap.Error(err))
			}
			fallback = append(fallback, r)
			r.Data = data
		case err != nil:
			r.Err = err
		default:
			r.Data = data
		}
	}
	for _, r := range fallback {
		if err := e.txReceipts(ctx, r.Data); err != nil {
			r.Data, r.Err = nil, err
		}
	}
	if mode != TracesOff {
		retry = e.traceResults(ctx, mode, rs, per, results, errs, known, retry, false)
	}
	return retry, used
}

// blockResult turns one eth_getBlockByNumber answer of a batch into the
// block or the error BlockByHeight would give; again is set when the call
// failed transiently and should be asked again. known is what the walk
// that checked the answer recorded (nil: the decoder checks it all).
func (e *Ethereum) blockResult(ctx context.Context, height uint64, raw json.RawMessage, callErr error, known *spans) (*chaindata.BlockData, *failure, error) {
	const method = "eth_getBlockByNumber"
	if callErr != nil {
		again, err := e.callFailure(ctx, method, height, callErr)
		return nil, again, err
	}
	if isNull(raw) {
		return nil, nil, e.fail(method, fmt.Errorf("rpc endpoint %q: block %d: %w", e.cfg.EndpointName, height, ErrBlockNotFound))
	}
	data, err := decoder{method: method, endpoint: e.cfg.EndpointName, height: height, known: known}.decodeBlock(raw)
	if err != nil {
		return nil, nil, e.fail(method, err)
	}
	e.countKeptTxs(method, data)
	return data, nil, nil
}

// receiptsResult applies one eth_getBlockReceipts answer of a batch to
// data, or returns the error Receipts would give. The receipts were asked
// by number in the same request as the block; decodeReceipts checks that
// they belong to this block's hash, so a reorg between the two calls shows
// as a *MalformedError, never as receipts of another block.
func (e *Ethereum) receiptsResult(ctx context.Context, data *chaindata.BlockData, raw json.RawMessage, callErr error, known *spans) (*failure, error) {
	const method = "eth_getBlockReceipts"
	height := data.Block.Number
	if callErr != nil {
		again, err := e.callFailure(ctx, method, height, callErr)
		return again, err
	}
	if isNull(raw) {
		return nil, e.fail(method, fmt.Errorf("rpc endpoint %q: receipts of block %d %s: %w",
			e.cfg.EndpointName, height, data.Block.Hash, ErrBlockNotFound))
	}
	if err := (decoder{method: method, endpoint: e.cfg.EndpointName, height: height, known: known}).decodeReceipts(data, raw); err != nil {
		return nil, e.fail(method, err)
	}
	e.countKeptReceipts(method, data)
	return nil, nil
}

// callFailure classifies the error of one call in a batch as do classifies
// a failed request: a transient failure is returned to be asked again,
// anything else becomes the error a single call would have returned.
func (e *Ethereum) callFailure(ctx context.Context, method string, height uint64, err error) (*failure, error) {
	f := e.classify(ctx, err)
	switch {
	case f.malformed != "":
		return nil, e.fail(method, decoder{method: method, endpoint: e.cfg.EndpointName, height: height}.malformed(f.malformed, "%v", f.err))
	case !f.transient:
		e.metrics.failure(e.cfg.ChainID, e.cfg.EndpointName, method, KindOther)
		return nil, &RequestError{Method: method, Endpoint: e.cfg.EndpointName, Code: f.code, HTTPStatus: f.status, Err: f.err}
	}
	e.metrics.failure(e.cfg.ChainID, e.cfg.EndpointName, method, KindTransient)
	return &f, nil
}

// callError is the error of one failed call of a batch that is not asked
// again on its own: callFailure's typed error, or a *TransientError.
func (e *Ethereum) callError(ctx context.Context, method string, height uint64, err error) error {
	f, err := e.callFailure(ctx, method, height, err)
	if err != nil {
		return err
	}
	return &TransientError{Method: method, Endpoint: e.cfg.EndpointName, Attempts: 1, Code: f.code, Err: f.err}
}

// batchCalls sends one batch of calls (methods[i] with args[i]) as do
// does: rate limit (one token per call), per-attempt timeout, metrics and
// retries of the request as a whole, at most budget attempts; used is how
// many it made. The calls' own errors are returned in errs, not retried
// here.
func (e *Ethereum) batchCalls(ctx context.Context, height uint64, budget int, methods []string, args [][]any) (used int, _ []json.RawMessage, _ []error, _ error) {
	used, results, errs, _, err := e.batchCallsWithin(ctx, requestLimits{attemptLimits: attemptLimits{timeout: e.cfg.Timeout}, method: batchMethod, http: e.httpClient},
		height, budget, methods, args)
	return used, results, errs, err
}

// requestLimits are a batch's attempt limits, the name its metrics carry
// and the HTTP client (with its answer size limit) that sends it.
type requestLimits struct {
	attemptLimits
	method string
	http   *http.Client
}

// batchCallsWithin is batchCalls with the given limits; known is what the
// walk that checked the answer recorded (json_spans.go), nil when the
// answer came another way.
func (e *Ethereum) batchCallsWithin(ctx context.Context, lim requestLimits, height uint64, budget int, methods []string, args [][]any) (used int, _ []json.RawMessage, _ []error, known *spans, _ error) {
	results := make([]json.RawMessage, len(args))
	errs := make([]error, len(args))
	used, err := e.attemptsWithin(ctx, lim.attemptLimits, lim.method, height, len(args), true, budget, func(ctx context.Context) error {
		if lim.http != nil {
			var err error
			results, errs, known, err = e.postBatch(ctx, lim.http, methods, args)
			return err
		}
		known = nil
		elems := make([]gethrpc.BatchElem, len(args))
		for i := range elems {
			results[i] = nil
			elems[i] = gethrpc.BatchElem{Method: methods[i], Args: args[i], Result: &results[i]}
		}
		if err := e.client.BatchCallContext(ctx, elems); err != nil {
			return err
		}
		for i, el := range elems {
			errs[i] = el.Error
		}
		return nil
	})
	if err != nil {
		var mal *MalformedError
		if errors.As(err, &mal) && mal.Field == "response size" {
			// Keep the cause visible so that the caller can split.
			return used, nil, nil, nil, &splitError{err}
		}
		return used, nil, nil, nil, err
	}
	return used, results, errs, known, nil
}

// splitError is a too-large answer; it unwraps to ErrResponseTooLarge and
// to the *MalformedError a single height would get.
type splitError struct{ err error }

func (e *splitError) Error() string   { return e.err.Error() }
func (e *splitError) Unwrap() []error { return []error{e.err, ErrResponseTooLarge} }
