package api

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/tideline-dev/tideline/pkg/chaindata"
)

// The proxy module: eth_blockNumber, eth_getBlockByNumber,
// eth_getTransactionByHash and eth_getTransactionReceipt, answered as a
// node answers them (JSON-RPC objects rebuilt by ethjson.go), errors
// included.

// esRPCID is the id of the proxy module's answers: Etherscan's request
// has none, and Etherscan answers with 1.
var esRPCID = json.RawMessage("1")

func (q *esReq) rpcResult(v json.RawMessage) {
	if v == nil {
		v = json.RawMessage("null")
	}
	writeJSON(q.w, http.StatusOK, rpcReply{JSONRPC: "2.0", ID: esRPCID, Result: v})
}

func (q *esReq) rpcFail(status, code int, format string, args ...any) {
	writeJSON(q.w, status, rpcFailure(esRPCID, rpcErrorf(code, format, args...)))
}

func (q *esReq) rpcFailed(e *apiError) {
	if e.Status < 500 {
		q.rpcFail(http.StatusOK, rpcServerError, "%s", e.Message)
		return
	}
	q.s.logFailure(q.r, e)
	q.rpcFail(e.Status, rpcInternal, "%s", e.Message)
}

func (q *esReq) blockNumber() {
	v, e := q.viewOf()
	if e != nil {
		q.rpcFailed(e)
		return
	}
	if !v.HasWatermark {
		q.rpcFail(http.StatusOK, rpcServerError, "nothing is indexed yet")
		return
	}
	q.rpcResult(json.RawMessage(`"` + quantity(v.Watermark) + `"`))
}

// quantityParam parses a JSON-RPC quantity (0x hex).
func quantityParam(s string) (uint64, bool) {
	if len(s) < 3 || (s[:2] != "0x" && s[:2] != "0X") || len(s) > 18 {
		return 0, false
	}
	n, err := strconv.ParseUint(s[2:], 16, 64)
	return n, err == nil
}

func (q *esReq) blockByNumber() {
	full := false
	switch q.get("boolean") {
	case "", "false":
	case "true":
		full = true
	default:
		q.rpcFail(http.StatusOK, rpcInvalidParams, "invalid argument 1: boolean %q is neither true nor false", clip(q.get("boolean")))
		return
	}
	h, ok := q.servedBlockTag() // etherscan_proxy_block.go
	if !ok {
		return
	}
	ctx := q.r.Context()
	bs, err := q.s.store.Chain.BlocksAt(ctx, q.id, []uint64{h})
	if err != nil {
		q.rpcFailed(fromStore(err))
		return
	}
	if len(bs) == 0 {
		q.rpcResult(nil)
		return
	}
	own, err := q.ownTransactions(bs[0])
	if err != nil {
		q.rpcFailed(fromStore(err))
		return
	}
	out, err := rpcBlock(bs[0], own, full)
	if err != nil {
		q.rpcFailed(fromStore(err))
		return
	}
	q.rpcResult(out)
}

// txParam parses the txhash parameter.
func (q *esReq) txParam() (string, bool) {
	h, e := parseHash("txhash", q.get("txhash"))
	if e != nil {
		q.rpcFail(http.StatusOK, rpcInvalidParams, "invalid argument 0: %s", e.Message)
		return "", false
	}
	return h, true
}

// servedTxParam finds the transaction of the txhash parameter; ok is
// false when the answer is already sent: an error, or null for a hash not
// found (as the node's own eth_getTransactionBy* methods answer).
func (q *esReq) servedTxParam() (tx chaindata.Transaction, ok bool) {
	hash, ok := q.txParam()
	if !ok {
		return tx, false
	}
	tx, e := q.servedTx(hash)
	switch {
	case e != nil && e.Status == http.StatusNotFound:
		q.rpcResult(nil)
		return tx, false
	case e != nil:
		q.rpcFailed(e)
		return tx, false
	}
	return tx, true
}

func (q *esReq) transactionByHash() {
	tx, ok := q.servedTxParam()
	if !ok {
		return
	}
	out, err := rpcTx(tx)
	if err != nil {
		q.rpcFailed(fromStore(err))
		return
	}
	q.rpcResult(out)
}

func (q *esReq) transactionReceipt() {
	tx, ok := q.servedTxParam()
	if !ok {
		return
	}
	own, err := q.ownLogs(tx)
	if err != nil {
		q.rpcFailed(fromStore(err))
		return
	}
	out, err := rpcReceipt(tx, own)
	if err != nil {
		q.rpcFailed(fromStore(err))
		return
	}
	q.rpcResult(out)
}
