package rpc

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
)

// Caller reads a contract's state with eth_call at the latest block: the
// token metadata activity asks a token its name, symbol, decimals and
// total supply this way. The latest block, not the height of a transfer:
// a node that keeps no history (most full nodes past 128 blocks) must
// still answer. *Ethereum and *Multi implement it.
type Caller interface {
	// CallLatest returns what the call returned. A contract that reverts,
	// or a node that refuses the call, is a *RequestError (the contract
	// answered nothing, and asking again will not change that); a result
	// that is not hex is a *MalformedError; a transport failure after the
	// retries a *TransientError.
	CallLatest(ctx context.Context, to string, data []byte) ([]byte, error)
}

var (
	_ Caller = (*Ethereum)(nil)
	_ Caller = (*Multi)(nil)
)

const methodCall = "eth_call"

// callArg is eth_call's transaction object.
type callArg struct {
	To   string `json:"to"`
	Data string `json:"data"`
}

// CallLatest sends eth_call({to, data}, "latest"), with the chain check of
// every request (callChecked), and checks that the answer is hex.
func (e *Ethereum) CallLatest(ctx context.Context, to string, data []byte) ([]byte, error) {
	raw, err := e.callChecked(ctx, methodCall, 0, callArg{To: to, Data: "0x" + hex.EncodeToString(data)}, "latest")
	if err != nil {
		return nil, err
	}
	out, err := decodeCallResult(raw)
	if err != nil {
		return nil, e.fail(methodCall, decoder{method: methodCall, endpoint: e.cfg.EndpointName}.malformed("result", "%v", err))
	}
	return out, nil
}

// decodeCallResult reads eth_call's result: a JSON string of 0x and an
// even number of hex digits ("0x" for no data).
func decodeCallResult(raw json.RawMessage) ([]byte, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("expected a hex string, got %s", snippet(raw))
	}
	if !strings.HasPrefix(s, "0x") {
		return nil, fmt.Errorf("%q lacks the 0x prefix", clipText(s))
	}
	b, err := hex.DecodeString(s[2:])
	if err != nil {
		return nil, fmt.Errorf("%q is not hex: %v", clipText(s), err)
	}
	return b, nil
}

func clipText(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// CallLatest asks the endpoints in order of preference until one answers.
// Every endpoint must be a Caller.
func (m *Multi) CallLatest(ctx context.Context, to string, data []byte) ([]byte, error) {
	var out []byte
	_, err := m.failover(ctx, methodCall, 0, -1, func(c Client) error {
		cl, ok := c.(Caller)
		if !ok {
			return &RequestError{Method: methodCall, Err: fmt.Errorf("endpoint client %T cannot make calls", c)}
		}
		var err error
		out, err = cl.CallLatest(ctx, to, data)
		return err
	})
	return out, err
}
