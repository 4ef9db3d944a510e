package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	gethrpc "github.com/ethereum/go-ethereum/rpc"
)

// Forwarder sends a client's call to the chain's endpoints as the client
// wrote it: the state methods the query API's JSON-RPC route does not
// answer from the index (eth_call, eth_getBalance, …). The call goes the
// way of every other request: the endpoint's rate limit, retries of what
// is transient, the chain check of expected_chain_id, metrics by method,
// and failover to the next endpoint (*Multi). *Ethereum and *Multi
// implement it.
type Forwarder interface {
	// Forward returns the node's result as sent. The node's own error
	// answer (a revert, parameters it refused) is an *AnswerError, the
	// call's outcome; a failure to get an answer is the usual
	// *TransientError, *RequestError or *AllFailedError.
	Forward(ctx context.Context, method string, params []json.RawMessage) (json.RawMessage, error)
}

var (
	_ Forwarder = (*Ethereum)(nil)
	_ Forwarder = (*Multi)(nil)
)

// AnswerError is a node's JSON-RPC error object in answer to a forwarded
// call: what the caller's client should see, as the node sent it (Message
// with endpoint URLs taken out).
type AnswerError struct {
	Endpoint string
	Method   string
	Code     int
	Message  string
	Data     json.RawMessage // nil when the node sent none
}

func (e *AnswerError) Error() string {
	return fmt.Sprintf("rpc endpoint %q: %s: the node answered error %d: %s", e.Endpoint, e.Method, e.Code, e.Message)
}

// methodNotFound is JSON-RPC's "method not found": an endpoint that does
// not serve a method, which another endpoint of the chain may.
const methodNotFound = -32601

// Forward sends method with params, checked like every request.
func (e *Ethereum) Forward(ctx context.Context, method string, params []json.RawMessage) (json.RawMessage, error) {
	args := make([]any, len(params))
	for i, p := range params {
		args[i] = p
	}
	raw, err := e.callChecked(ctx, method, 0, args...)
	if err != nil {
		return nil, e.answerOf(method, err)
	}
	return raw, nil
}

// answerOf turns a node's error answer into an *AnswerError; any other
// failure stays as it is.
func (e *Ethereum) answerOf(method string, err error) error {
	var req *RequestError
	var node gethrpc.Error
	if !errors.As(err, &req) || req.Code == 0 || !errors.As(err, &node) {
		return err
	}
	a := &AnswerError{Endpoint: e.cfg.EndpointName, Method: method, Code: node.ErrorCode(), Message: e.redact.clean(node.Error())}
	var withData gethrpc.DataError
	if errors.As(err, &withData) && withData.ErrorData() != nil {
		if b, merr := json.Marshal(withData.ErrorData()); merr == nil {
			a.Data = b
		}
	}
	return a
}

// Forward asks the endpoints in order of preference until one answers. A
// node's error answer is an answer (the next endpoint would say the
// same), except "method not found": that endpoint does not serve the
// method, another may.
func (m *Multi) Forward(ctx context.Context, method string, params []json.RawMessage) (json.RawMessage, error) {
	var out json.RawMessage
	var answer *AnswerError
	_, err := m.failover(ctx, method, 0, -1, func(c Client) error {
		f, ok := c.(Forwarder)
		if !ok {
			return &RequestError{Method: method, Err: fmt.Errorf("endpoint client %T cannot forward calls", c)}
		}
		raw, err := f.Forward(ctx, method, params)
		var a *AnswerError
		if errors.As(err, &a) && a.Code != methodNotFound {
			answer = a
			return nil
		}
		out = raw
		return err
	})
	switch {
	case answer != nil:
		return nil, answer
	case err != nil:
		return nil, err
	}
	return out, nil
}
