package api

import (
	"encoding/json"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/rpc"
)

// What the JSON-RPC route asks the chain's endpoints: the methods of
// api.rpc_node_methods (state and fees: what the index does not hold),
// passed as the client sent them through the worker's own client (the
// endpoints' failover, rate limits and chain check; their URLs never
// reach an answer or a log line), and the heights of the safe and
// finalized tags, which only the node knows.
//
// Consistency: a node answers state at its own head, which may be ahead
// of the watermark (eth_blockNumber here) by the indexing lag. A client
// that wants state consistent with the history it reads asks at an
// explicit number at or below eth_blockNumber.

// tracersOfTheNode are the methods answered from the index for the
// callTracer and by the node, when listed, for the tracers that
// re-execute (jsonrpc_traces.go).
var tracersOfTheNode = map[string]bool{
	"debug_traceTransaction": true, "debug_traceBlockByNumber": true, "debug_traceBlockByHash": true,
}

// nodeMethodSet checks api.rpc_node_methods against the methods answered
// from the index: one method has one source.
func nodeMethodSet(methods []string, forwarding bool) (map[string]bool, error) {
	set := map[string]bool{}
	for _, m := range methods {
		if _, indexed := rpcMethods[m]; indexed && !tracersOfTheNode[m] {
			return nil, fmt.Errorf("api: api.rpc_node_methods lists %s, which is answered from the index", m)
		}
		set[m] = true
	}
	if !forwarding {
		return map[string]bool{}, nil
	}
	return set, nil
}

// forward passes the call to the chain's endpoints: the node's result, or
// the node's own error answer as it sent it (a revert's data included).
func (q *rpcReq) forward(method string, p rpcParams) (json.RawMessage, *rpcError) {
	params := []json.RawMessage(p)
	if params == nil {
		params = []json.RawMessage{}
	}
	raw, err := q.s.forward(q.r.Context(), q.id, method, params)
	var answer *rpc.AnswerError
	switch {
	case errors.As(err, &answer):
		return nil, &rpcError{Code: answer.Code, Message: q.s.redact(answer.Message), Data: answer.Data}
	case err != nil && q.r.Context().Err() != nil:
		return nil, &rpcError{Code: rpcServerError, timedOut: true, Message: fmt.Sprintf(
			"the request's time (api.request_timeout, %s) ran out before the chain's endpoints answered %s; retry, or send fewer calls at once",
			q.s.cfg.RequestTimeout, method)}
	case err != nil:
		q.s.log.Warn("the chain's endpoints did not answer a forwarded call", zap.String("route", rpcRoute),
			zap.String("chain_id", q.id), zap.String("method", method), zap.String("error", q.s.redact(err.Error())))
		return nil, &rpcError{Code: rpcServerError, Message: "the chain's endpoints did not answer " + method + "; retry later",
			unavailable: true}
	}
	return raw, nil
}

// nodeTagHeight asks the node which height a tag it alone knows (safe,
// finalized) names.
func (q *rpcReq) nodeTagHeight(tag string) (uint64, *rpcError) {
	if q.s.forward == nil {
		return 0, rpcErrorf(rpcServerError, "block tag %q needs the node, which this API does not reach; ask for a number or latest", tag)
	}
	arg, _ := json.Marshal(tag)
	raw, e := q.forward("eth_getBlockByNumber", rpcParams{arg, json.RawMessage("false")})
	if e != nil {
		return 0, e
	}
	var b struct {
		Number string `json:"number"`
	}
	if json.Unmarshal(raw, &b) != nil || b.Number == "" {
		return 0, rpcErrorf(rpcServerError, "the node has no %s block", tag)
	}
	n, ok := quantityParam(b.Number)
	if !ok {
		return 0, rpcErrorf(rpcServerError, "the node's %s block number %q is not a quantity", tag, clip(b.Number))
	}
	return n, nil
}
