package api

import (
	"context"
	"encoding/json"
	"errors"
	"math/big"
	"net/http"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/rpc"
)

// Etherscan's actions on state, which the index does not hold: the
// account module's balance and balancemulti, and the proxy module's
// eth_call, eth_estimateGas, eth_getCode, eth_getStorageAt,
// eth_getTransactionCount, eth_gasPrice and eth_sendRawTransaction. Each
// is the node method of the same name (eth_getBalance for the balances)
// and goes to the chain's endpoints the way the JSON-RPC route's node
// methods do (jsonrpc_node.go), under the same list,
// api.rpc_node_methods: one policy says what reaches the node.

// esMaxBalances is balancemulti's most addresses, as Etherscan's.
const esMaxBalances = 20

// errNotForwarded: the method is not one api.rpc_node_methods sends to the
// node, or this API reaches no node.
var errNotForwarded = errors.New("not sent to the node here")

// askNode sends a node method built by this package; the error is the
// node's *rpc.AnswerError, errNotForwarded, or a failure to get an answer.
func (q *esReq) askNode(method string, params ...any) (json.RawMessage, error) {
	return q.askNodeWithin(q.r.Context(), method, params...)
}

// askNodeWithin is askNode under ctx.
func (q *esReq) askNodeWithin(ctx context.Context, method string, params ...any) (json.RawMessage, error) {
	if q.s.forward == nil || !q.s.nodeMethods[method] {
		return nil, errNotForwarded
	}
	raw := make([]json.RawMessage, len(params))
	for i, p := range params {
		raw[i] = result(p)
	}
	return q.s.forward(ctx, q.id, method, raw)
}

// askNodeLeaving is askNode given half the request's time left, so that
// an answer that has a fallback (tokensupply: the transfers' sum) still
// has time for it when the node does not answer.
func (q *esReq) askNodeLeaving(method string, params ...any) (json.RawMessage, error) {
	ctx := q.r.Context()
	if dl, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Until(dl)/2)
		defer cancel()
	}
	return q.askNodeWithin(ctx, method, params...)
}

// nodeCall asks the node; ok is false when the answer (an error, in the
// proxy module's JSON-RPC form or Etherscan's envelope) is sent.
func (q *esReq) nodeCall(method string, proxy bool, params ...any) (json.RawMessage, bool) {
	out, err := q.askNode(method, params...)
	var answer *rpc.AnswerError
	switch {
	case errors.Is(err, errNotForwarded) && proxy:
		q.rpcFail(http.StatusOK, rpcMethodNotFound, "the method %s does not exist/is not available", method)
		return nil, false
	case errors.Is(err, errNotForwarded):
		q.notOK("%s is not served here (api.rpc_node_methods)", method)
		return nil, false
	case errors.As(err, &answer) && proxy:
		writeJSON(q.w, http.StatusOK, rpcFailure(esRPCID, &rpcError{Code: answer.Code, Message: q.s.redact(answer.Message), Data: answer.Data}))
		return nil, false
	case errors.As(err, &answer):
		q.notOK("%s", q.s.redact(answer.Message))
		return nil, false
	case err != nil:
		q.s.log.Warn("the chain's endpoints did not answer an Etherscan action", zap.String("chain_id", q.id),
			zap.String("method", method), zap.String("error", q.s.redact(err.Error())))
		if proxy {
			q.rpcFail(http.StatusOK, rpcServerError, "the chain's endpoints did not answer %s; retry later", method)
		} else {
			q.notOK("the chain's endpoints did not answer; retry later")
		}
		return nil, false
	}
	return out, true
}

// tagParam is the tag (or ethers' blockTag) parameter: latest when absent,
// else a tag or a hex number, passed to the node as it is.
func (q *esReq) tagParam(proxy bool) (string, bool) {
	tag := q.get("tag")
	if tag == "" {
		tag = q.get("blockTag")
	}
	switch tag {
	case "":
		return "latest", true
	case "latest", "earliest", "pending", "safe", "finalized":
		return tag, true
	}
	if _, ok := quantityParam(tag); !ok {
		if proxy {
			q.rpcFail(http.StatusOK, rpcInvalidParams, "invalid argument: tag %q is not a hex block number or latest, earliest, pending", clip(tag))
		} else {
			q.notOK("Invalid tag %q: a hex block number or latest, earliest, pending", clip(tag))
		}
		return "", false
	}
	return tag, true
}

// proxyAddress parses a required address of a proxy action.
func (q *esReq) proxyAddress(name string) (string, bool) {
	a, e := parseAddress(name, q.get(name))
	if e != nil {
		q.rpcFail(http.StatusOK, rpcInvalidParams, "invalid argument: %s", e.Message)
		return "", false
	}
	return a, true
}

// balance answers account/balance: the wei balance as a decimal string.
func (q *esReq) balance() {
	if strings.Contains(q.get("address"), ",") {
		q.notOK("Invalid address format: one address (balancemulti takes several)")
		return
	}
	addr, ok := q.requiredAddress("address")
	if !ok {
		return
	}
	tag, ok := q.tagParam(false)
	if !ok {
		return
	}
	if wei, ok := q.weiBalance(addr, tag); ok {
		q.ok(wei)
	}
}

func (q *esReq) weiBalance(addr, tag string) (string, bool) {
	raw, ok := q.nodeCall("eth_getBalance", false, addr, tag)
	if !ok {
		return "", false
	}
	var hex string
	n, good := new(big.Int), json.Unmarshal(raw, &hex) == nil && strings.HasPrefix(hex, "0x")
	if good {
		_, good = n.SetString(hex[2:], 16)
	}
	if !good {
		q.notOK("the node's balance %s is not a hex quantity", clip(string(raw)))
		return "", false
	}
	return n.String(), true
}

// balanceMulti answers account/balancemulti: up to 20 addresses.
func (q *esReq) balanceMulti() {
	list := strings.Split(q.get("address"), ",")
	if q.get("address") == "" || len(list) > esMaxBalances {
		q.notOK("Invalid address format: 1 to %d addresses separated by commas", esMaxBalances)
		return
	}
	tag, ok := q.tagParam(false)
	if !ok {
		return
	}
	type balance struct {
		Account string `json:"account"`
		Balance string `json:"balance"`
	}
	out := make([]balance, 0, len(list))
	for _, a := range list {
		addr, e := parseAddress("address", strings.TrimSpace(a))
		if e != nil {
			q.notOK("Invalid address format: %s", e.Message)
			return
		}
		wei, ok := q.weiBalance(addr, tag)
		if !ok {
			return
		}
		out = append(out, balance{Account: addr, Balance: wei})
	}
	q.ok(out)
}

// proxyAnswer sends the node's result in the proxy module's form.
func (q *esReq) proxyAnswer(method string, params ...any) {
	if raw, ok := q.nodeCall(method, true, params...); ok {
		q.rpcResult(raw)
	}
}

func (q *esReq) proxyGasPrice() { q.proxyAnswer("eth_gasPrice") }

// proxyAccount answers eth_getTransactionCount and eth_getCode (address,
// tag).
func (q *esReq) proxyAccount(method string) {
	addr, ok := q.proxyAddress("address")
	if !ok {
		return
	}
	if tag, ok := q.tagParam(true); ok {
		q.proxyAnswer(method, addr, tag)
	}
}

func (q *esReq) proxyStorageAt() {
	addr, ok := q.proxyAddress("address")
	if !ok {
		return
	}
	pos, good := storageSlot(q.get("position"))
	if !good {
		q.rpcFail(http.StatusOK, rpcInvalidParams, "invalid argument: position %q is not a storage slot (hex, or decimal as ethers sends it)", clip(q.get("position")))
		return
	}
	if tag, ok := q.tagParam(true); ok {
		q.proxyAnswer("eth_getStorageAt", addr, pos, tag)
	}
}

// storageSlot reads a storage position: hex (0x…, up to 32 bytes) or a
// decimal number, which ethers' EtherscanProvider sends; the node is given
// hex.
func storageSlot(s string) (string, bool) {
	if strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X") {
		n, ok := new(big.Int).SetString(s[2:], 16)
		return s, ok && n.BitLen() <= 256
	}
	n, ok := new(big.Int).SetString(s, 10)
	if !ok || n.Sign() < 0 || n.BitLen() > 256 {
		return "", false
	}
	return "0x" + n.Text(16), true
}

// esCallFields are the transaction fields eth_call and eth_estimateGas
// take, as Etherscan's parameters (gas) and ethers' (gasLimit) name them.
var esCallFields = map[string]string{
	"from": "from", "to": "to", "data": "data", "value": "value", "gas": "gas", "gasLimit": "gas",
	"gasPrice": "gasPrice", "maxFeePerGas": "maxFeePerGas", "maxPriorityFeePerGas": "maxPriorityFeePerGas",
	"nonce": "nonce", "type": "type",
}

// proxyCall answers eth_call and eth_estimateGas: the call object from
// the parameters, each a hex string passed to the node as it is.
func (q *esReq) proxyCall(method string) {
	call := map[string]string{}
	for param, field := range esCallFields {
		v := q.get(param)
		if v == "" {
			continue
		}
		if !strings.HasPrefix(v, "0x") {
			q.rpcFail(http.StatusOK, rpcInvalidParams, "invalid argument: %s %q is not hex (0x…)", param, clip(v))
			return
		}
		call[field] = v
	}
	if method == "eth_call" && call["to"] == "" && call["data"] == "" {
		q.rpcFail(http.StatusOK, rpcInvalidParams, "invalid argument: eth_call needs to or data")
		return
	}
	if method == "eth_estimateGas" {
		q.proxyAnswer(method, call)
		return
	}
	if tag, ok := q.tagParam(true); ok {
		q.proxyAnswer(method, call, tag)
	}
}

func (q *esReq) proxySendRaw() {
	hex := q.get("hex")
	if !strings.HasPrefix(hex, "0x") || len(hex) < 4 {
		q.rpcFail(http.StatusOK, rpcInvalidParams, "invalid argument: hex %q is not a signed transaction (0x…)", clip(hex))
		return
	}
	q.proxyAnswer("eth_sendRawTransaction", hex)
}
