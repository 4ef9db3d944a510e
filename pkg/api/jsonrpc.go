package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"

	"go.uber.org/zap"
)

// JSON-RPC 2.0 at POST /v1/chains/{id}/rpc: the node's read methods
// answered from the index, so that wallets, ethers/viem apps and explorers
// read history here with the node's own protocol. The answers are the
// node's objects as stored (ethjson.go): the same keys and values as the
// node that served the height. "latest" is the watermark; a block above it
// does not exist yet (null, as a node answers a block it has not seen),
// and eth_getLogs over any range is one indexed read, bounded by the
// number of logs it returns (api.rpc_max_logs), not by blocks.
//
// State (eth_call, eth_getBalance, …) is the node's: the methods of
// api.rpc_node_methods are passed to the chain's endpoints as sent
// (jsonrpc_node.go).
//
// This file holds the route: the request (one call or a batch of at most
// api.rpc_max_batch), the answers and error codes, and rpcMethods, the one
// table from method name to handler. The handlers are in
// jsonrpc_blocks.go (blocks, transactions, receipts), jsonrpc_logs.go and
// jsonrpc_node.go; their parameters in jsonrpc_params.go.
//
// Status codes: a call's own error is a JSON-RPC error object with HTTP
// 200, as nodes answer (a client reads the error object, and one call of a
// batch failing must not fail the others); api_rpc_calls_total counts
// them by method and outcome for monitoring. Refused before any call is
// read (an unknown chain, a body too large, the API key, the rate limit):
// the HTTP status with a JSON-RPC error object and a null id.

const rpcRoute = "POST /v1/chains/{id}/rpc"

// maxRPCBody bounds a request's body: rpc_max_batch calls of a few hundred
// bytes each fit well inside it.
const maxRPCBody = 8 << 20

// JSON-RPC error codes: the protocol's own (-32700 … -32603) and the
// server-error range's, as EIP-1474 names them.
const (
	rpcParseError     = -32700
	rpcInvalidRequest = -32600
	rpcMethodNotFound = -32601
	rpcInvalidParams  = -32602
	rpcInternal       = -32603
	rpcServerError    = -32000
	rpcLimitExceeded  = -32005
)

type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"` // a node's, passed on (a revert's output)
	// unavailable: the chain's endpoints gave no answer (the metric's
	// node_unavailable outcome).
	unavailable bool
	// timedOut: the request's deadline passed first (the timeout outcome).
	timedOut bool
}

func (e *rpcError) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }

func rpcErrorf(code int, format string, args ...any) *rpcError {
	return &rpcError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// rpcCallMsg is one call as a client sends it. ID stays raw: a string, a
// number or null, echoed as it came; absent (nil) makes a notification.
type rpcCallMsg struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

// rpcReply is one answer: Result (JSON null included) or Error.
type rpcReply struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

var rpcNull = json.RawMessage("null")

func rpcFailure(id json.RawMessage, e *rpcError) rpcReply {
	if id == nil {
		id = rpcNull
	}
	return rpcReply{JSONRPC: "2.0", ID: id, Error: e}
}

// rpcRefusal is admission's answer (admit.go) on this route.
func rpcRefusal(rej *rejection) rpcReply {
	code := rpcServerError
	if rej.status == http.StatusTooManyRequests {
		code = rpcLimitExceeded
	}
	return rpcFailure(nil, &rpcError{Code: code, Message: rej.message})
}

// rpcMethod answers one call; a nil result is JSON null.
type rpcMethod func(q *rpcReq, p rpcParams) (json.RawMessage, *rpcError)

// rpcMethods is every method answered from the index; the methods of
// api.rpc_node_methods go to the node (jsonrpc_node.go). Anything else is
// -32601, before any read; the metric's method label is one of these
// names, a node method's, or "other".
var rpcMethods = map[string]rpcMethod{
	"eth_chainId":                             (*rpcReq).chainID,
	"net_version":                             (*rpcReq).netVersion,
	"eth_blockNumber":                         (*rpcReq).blockNumber,
	"eth_getBlockByNumber":                    (*rpcReq).blockByNumber,
	"eth_getBlockByHash":                      (*rpcReq).blockByHash,
	"eth_getBlockTransactionCountByNumber":    (*rpcReq).txCountByNumber,
	"eth_getBlockTransactionCountByHash":      (*rpcReq).txCountByHash,
	"eth_getUncleCountByBlockNumber":          (*rpcReq).uncleCountByNumber,
	"eth_getUncleCountByBlockHash":            (*rpcReq).uncleCountByHash,
	"eth_getTransactionByHash":                (*rpcReq).txByHash,
	"eth_getTransactionByBlockNumberAndIndex": (*rpcReq).txByNumberAndIndex,
	"eth_getTransactionByBlockHashAndIndex":   (*rpcReq).txByHashAndIndex,
	"eth_getTransactionReceipt":               (*rpcReq).receipt,
	"eth_getBlockReceipts":                    (*rpcReq).blockReceipts,
	"eth_getLogs":                             (*rpcReq).logs,
	// Otterscan (jsonrpc_ots.go).
	"ots_getApiLevel":                    (*rpcReq).otsAPILevel,
	"erigon_getHeaderByNumber":           (*rpcReq).erigonHeader,
	"ots_hasCode":                        (*rpcReq).otsHasCode,
	"ots_getInternalOperations":          (*rpcReq).otsInternalOperations,
	"ots_traceTransaction":               (*rpcReq).otsTraceTransaction,
	"ots_getTransactionError":            (*rpcReq).otsTransactionError,
	"ots_getBlockDetails":                (*rpcReq).otsBlockDetailsByNumber,
	"ots_getBlockDetailsByHash":          (*rpcReq).otsBlockDetailsByHash,
	"ots_getBlockTransactions":           (*rpcReq).otsBlockTransactions,
	"ots_searchTransactionsBefore":       (*rpcReq).otsSearchBefore,
	"ots_searchTransactionsAfter":        (*rpcReq).otsSearchAfter,
	"ots_getTransactionBySenderAndNonce": (*rpcReq).otsTxBySenderAndNonce,
	"ots_getContractCreator":             (*rpcReq).otsContractCreator,
	// Call traces (jsonrpc_traces.go).
	"debug_traceTransaction":   (*rpcReq).debugTraceTransaction,
	"debug_traceBlockByNumber": (*rpcReq).debugTraceBlockByNumber,
	"debug_traceBlockByHash":   (*rpcReq).debugTraceBlockByHash,
	"trace_transaction":        (*rpcReq).traceTransaction,
	"trace_block":              (*rpcReq).traceBlock,
}

// rpcReq is one call of the route: its chain, and what the calls of one
// HTTP request share (a batch's calls run side by side, each with its own
// rpcReq).
type rpcReq struct {
	chainReq
	*shared
	method string // the call being answered, for log lines
}

// shared is what the calls of one request share: the chain's view, read
// once for all of a batch's calls so that they agree on "latest", and the
// batch's reads by hash (jsonrpc_batch.go), made before any call runs.
type shared struct {
	mu    sync.Mutex
	v     view
	haveV bool
	pre   *prefetched
}

// view reads the chain's view on the first call that needs it; calls
// running beside it wait for that read rather than make their own.
func (q *rpcReq) view() (view, *rpcError) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.haveV {
		return q.v, nil
	}
	v, e := q.viewOf()
	if e != nil {
		return view{}, q.failed(e)
	}
	q.v, q.haveV = v, true
	return v, nil
}

// failed turns an apiError of the shared code into a call's error: a
// client's fault keeps its message as a server error (-32000), the
// database's is logged and answered without its detail.
func (q *rpcReq) failed(e *apiError) *rpcError {
	if e.Status < 500 {
		return &rpcError{Code: rpcServerError, Message: e.Message}
	}
	q.s.logFailure(q.r, e)
	return &rpcError{Code: rpcInternal, Message: e.Message, timedOut: e.Code == codeTimeout}
}

// storeFailed is failed for a read's error.
func (q *rpcReq) storeFailed(err error) *rpcError { return q.failed(fromStore(err)) }

// jsonrpc serves the route: one call, or a batch answered in order.
func (s *Server) jsonrpc(w http.ResponseWriter, r *http.Request) {
	c, e := s.chainOf(r)
	if e != nil {
		writeJSON(w, e.Status, rpcFailure(nil, &rpcError{Code: rpcServerError, Message: e.Message}))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRPCBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeJSON(w, http.StatusRequestEntityTooLarge, rpcFailure(nil, rpcErrorf(rpcInvalidRequest,
				"request body above %d bytes; send a smaller batch", maxRPCBody)))
			return
		}
		writeJSON(w, http.StatusBadRequest, rpcFailure(nil, rpcErrorf(rpcParseError, "reading the request body: %v", err)))
		return
	}
	q := &rpcReq{chainReq: c, shared: &shared{}}
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '[' {
		reply, answer := q.serve(body)
		if !answer {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		writeJSON(w, http.StatusOK, reply)
		return
	}
	var calls []json.RawMessage
	if err := json.Unmarshal(body, &calls); err != nil {
		writeJSON(w, http.StatusOK, rpcFailure(nil, rpcErrorf(rpcParseError, "the batch is not a JSON array: %v", err)))
		return
	}
	switch max := s.cfg.RPCMaxBatch; {
	case len(calls) == 0:
		writeJSON(w, http.StatusOK, rpcFailure(nil, rpcErrorf(rpcInvalidRequest, "empty batch")))
		return
	case len(calls) > max:
		writeJSON(w, http.StatusOK, rpcFailure(nil, rpcErrorf(rpcInvalidRequest,
			"batch of %d calls is above api.rpc_max_batch (%d); split it", len(calls), max)))
		return
	}
	q.prefetch(calls)
	replies := q.serveBatch(calls)
	if len(replies) == 0 { // notifications only
		w.WriteHeader(http.StatusNoContent)
		return
	}
	writeJSON(w, http.StatusOK, replies)
}

// serve answers one call; answer is false for a notification (a call
// without an id), which is carried out (a transaction sent, when
// eth_sendRawTransaction goes to the node) and gets no reply.
func (q *rpcReq) serve(raw json.RawMessage) (reply rpcReply, answer bool) {
	var m rpcCallMsg
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&m); err != nil {
		q.s.m.rpcCalls.WithLabelValues("other", outcomeClientError).Inc()
		if json.Valid(raw) { // JSON, but not a call object
			return rpcFailure(nil, rpcErrorf(rpcInvalidRequest, "not a JSON-RPC call object: %v", err)), true
		}
		return rpcFailure(nil, rpcErrorf(rpcParseError, "not JSON: %v", err)), true
	}
	if !validID(m.ID) {
		q.s.m.rpcCalls.WithLabelValues("other", outcomeClientError).Inc()
		return rpcFailure(nil, rpcErrorf(rpcInvalidRequest, "id must be a string, a number or null")), true
	}
	fn, known := rpcMethods[m.Method]
	if !known && q.s.nodeMethods[m.Method] {
		method := m.Method
		fn, known = func(q *rpcReq, p rpcParams) (json.RawMessage, *rpcError) { return q.forward(method, p) }, true
	}
	reply, e := q.call(m, fn, known)
	q.s.m.rpcCalls.WithLabelValues(methodLabel(q.s, m.Method), outcomeOf(e)).Inc()
	return reply, m.ID != nil
}

// methodLabel is the metric's method label: the method when served (from
// the index or the node), else "other".
func methodLabel(s *Server, method string) string {
	if _, indexed := rpcMethods[method]; indexed || s.nodeMethods[method] {
		return method
	}
	return "other"
}

func (q *rpcReq) call(m rpcCallMsg, fn rpcMethod, known bool) (rpcReply, *rpcError) {
	fail := func(e *rpcError) (rpcReply, *rpcError) { return rpcFailure(m.ID, e), e }
	switch {
	case m.JSONRPC != "2.0":
		return fail(rpcErrorf(rpcInvalidRequest, `jsonrpc must be "2.0"`))
	case m.Method == "":
		return fail(rpcErrorf(rpcInvalidRequest, "method is missing"))
	case !known:
		return fail(rpcErrorf(rpcMethodNotFound, "the method %s does not exist/is not available", clip(m.Method)))
	}
	p, e := paramsOf(m.Params)
	if e != nil {
		return fail(e)
	}
	q.method = m.Method
	result, e := fn(q, p)
	if e != nil {
		return fail(e)
	}
	if result == nil {
		result = rpcNull
	}
	return rpcReply{JSONRPC: "2.0", ID: m.ID, Result: result}, nil
}

// validID: a string, a number or null (absent is a notification).
func validID(id json.RawMessage) bool {
	if id == nil {
		return true
	}
	switch id[0] {
	case '"', 'n', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return true
	}
	return false
}

// The outcome label of api_rpc_calls_total.
const (
	outcomeOK              = "ok"
	outcomeClientError     = "client_error"
	outcomeServerError     = "server_error"
	outcomeNodeUnavailable = "node_unavailable"
	outcomeTimeout         = "timeout"
)

func outcomeOf(e *rpcError) string {
	switch {
	case e == nil:
		return outcomeOK
	case e.timedOut:
		return outcomeTimeout
	case e.Code == rpcInternal:
		return outcomeServerError
	case e.unavailable:
		return outcomeNodeUnavailable
	}
	return outcomeClientError
}

// result marshals a value built by this package (never fails).
func result(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("jsonrpc: marshal %T: %v", v, err))
	}
	return b
}

// encoded is the answer of an object rebuilt from stored rows; a row that
// cannot be rebuilt (a corrupt raw object) is the server's fault.
func (q *rpcReq) encoded(v json.RawMessage, err error) (json.RawMessage, *rpcError) {
	if err != nil {
		q.s.log.Warn("stored object could not be rebuilt", zap.String("route", rpcRoute),
			zap.String("method", q.method), zap.Error(err))
		return nil, &rpcError{Code: rpcInternal, Message: "a stored object could not be rebuilt; the API's log has the detail"}
	}
	return v, nil
}
