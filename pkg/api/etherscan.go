package api

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/tideline-dev/tideline/pkg/tokens"
)

// The Etherscan-compatible subset at /v1/chains/{id}/etherscan/api: the
// same query parameters, envelope and field formats as Etherscan's API, so
// that tools written for it work against tideline by changing the base
// URL. The actions served are esTable's.
//
// Status codes, as Etherscan: a request the client got wrong is answered
// with HTTP 200 and `{"status":"0","message":"NOTOK","result":"Error! …"}`
// (Etherscan clients read the envelope, not the status); a proxy call it
// got wrong is a JSON-RPC error object, also with 200. What is tideline's
// fault or the database's (a timeout, a failed read) keeps its HTTP status
// (503, 500) with the same envelope, so monitoring sees it. A refused API
// key and the rate limit are Etherscan's texts with 401 and 429
// (admit.go, which also parses the form, apikey being in it). An unknown
// chain in the path is the REST 404.
//
// Formats, as Etherscan documents them: the account module gives numbers
// as decimal strings; the logs module gives them as hex strings, where
// Etherscan writes zero as "0x"; the proxy module answers what a node
// answers (tideline's copy of it). "latest" is the watermark: tideline
// serves nothing above it.
//
// A module a file (etherscan_account.go, etherscan_tokens.go,
// etherscan_internal.go, etherscan_logs.go, etherscan_block.go,
// etherscan_proxy*.go, etherscan_transaction.go; the actions on state,
// which go to the node, in etherscan_state.go). This one holds what
// they share: the request, its envelope answers, the one dispatch table
// from module and action to handler (esTable), and the paging and
// block-number parameters.

// envelope is Etherscan's answer for the account, logs and block modules.
type envelope struct {
	Status  string `json:"status"`
	Message string `json:"message"`
	Result  any    `json:"result"`
}

// esReq is one Etherscan request.
type esReq struct {
	chainReq
	w    http.ResponseWriter
	form url.Values
}

func (q *esReq) get(name string) string { return strings.TrimSpace(q.form.Get(name)) }
func (q *esReq) has(name string) bool   { return q.get(name) != "" }

// notOK is Etherscan's answer to a request it cannot serve.
func (q *esReq) notOK(format string, args ...any) {
	writeJSON(q.w, http.StatusOK, envelope{Status: "0", Message: "NOTOK", Result: "Error! " + fmt.Sprintf(format, args...)})
}

// notOKResult is status 0 with Etherscan's own result text (no "Error!").
func (q *esReq) notOKResult(result string) {
	writeJSON(q.w, http.StatusOK, envelope{Status: "0", Message: "NOTOK", Result: result})
}

// failed answers a server-side failure with its HTTP status.
func (q *esReq) failed(e *apiError) {
	if e.Status < 500 { // a 404/410 of the REST helpers: the client's doing
		q.notOK("%s", e.Message)
		return
	}
	q.s.logFailure(q.r, e)
	writeJSON(q.w, e.Status, envelope{Status: "0", Message: "NOTOK", Result: "Error! " + e.Message})
}

func (q *esReq) ok(result any) {
	writeJSON(q.w, http.StatusOK, envelope{Status: "1", Message: "OK", Result: result})
}

// empty is Etherscan's "nothing found": status 0 with an empty list.
func (q *esReq) empty(message string) {
	writeJSON(q.w, http.StatusOK, envelope{Status: "0", Message: message, Result: []any{}})
}

// esAction is one action of the Etherscan subset and the method that
// serves it.
type esAction struct {
	module, action string
	serve          func(*esReq)
}

// esTable is the one dispatch of the Etherscan route, from module and
// action to handler (each in its module's file), in the order the error
// answers list them. A new action is a line here.
var esTable = []esAction{
	{"account", "txlist", (*esReq).txlist},
	{"account", "txlistinternal", (*esReq).txlistInternal},
	{"account", "tokentx", func(q *esReq) { q.tokenTx(tokens.ERC20) }},
	{"account", "tokennfttx", func(q *esReq) { q.tokenTx(tokens.ERC721) }},
	{"account", "token1155tx", func(q *esReq) { q.tokenTx(tokens.ERC1155) }},
	{"account", "tokenbalance", (*esReq).tokenBalance},
	{"account", "balance", (*esReq).balance},
	{"account", "balancemulti", (*esReq).balanceMulti},
	{"logs", "getLogs", (*esReq).getLogs},
	{"block", "getblocknobytime", (*esReq).blockByTime},
	{"proxy", "eth_blockNumber", (*esReq).blockNumber},
	{"proxy", "eth_getBlockByNumber", (*esReq).blockByNumber},
	{"proxy", "eth_getTransactionByHash", (*esReq).transactionByHash},
	{"proxy", "eth_getTransactionReceipt", (*esReq).transactionReceipt},
	{"proxy", "eth_getBlockTransactionCountByNumber", (*esReq).blockTxCount},
	{"proxy", "eth_getTransactionByBlockNumberAndIndex", (*esReq).txByBlockAndIndex},
	{"proxy", "eth_call", func(q *esReq) { q.proxyCall("eth_call") }},
	{"proxy", "eth_estimateGas", func(q *esReq) { q.proxyCall("eth_estimateGas") }},
	{"proxy", "eth_getCode", func(q *esReq) { q.proxyAccount("eth_getCode") }},
	{"proxy", "eth_getTransactionCount", func(q *esReq) { q.proxyAccount("eth_getTransactionCount") }},
	{"proxy", "eth_getStorageAt", (*esReq).proxyStorageAt},
	{"proxy", "eth_gasPrice", (*esReq).proxyGasPrice},
	{"proxy", "eth_sendRawTransaction", (*esReq).proxySendRaw},
	{"transaction", "getstatus", (*esReq).execStatus},
	{"transaction", "gettxreceiptstatus", (*esReq).txReceiptStatus},
	{"stats", "tokensupply", (*esReq).tokenSupply},
	{"contract", "getabi", (*esReq).getABI},
	{"contract", "getsourcecode", (*esReq).getSourceCode},
	{"contract", "getcontractcreation", (*esReq).getContractCreation},
}

// esActions are the action names of each module (for the metric's labels
// and the error answers), and esServe the handlers by module and action:
// both read off esTable.
var esActions, esServe = func() (map[string][]string, map[string]map[string]func(*esReq)) {
	names, serve := map[string][]string{}, map[string]map[string]func(*esReq){}
	for _, a := range esTable {
		names[a.module] = append(names[a.module], a.action)
		if serve[a.module] == nil {
			serve[a.module] = map[string]func(*esReq){}
		}
		serve[a.module][a.action] = a.serve
	}
	return names, serve
}()

func esLabels(module, action string) (string, string) {
	actions, ok := esServe[module]
	if !ok {
		return "other", "other"
	}
	if _, ok := actions[action]; ok {
		return module, action
	}
	return module, "other"
}

func (s *Server) etherscan(w http.ResponseWriter, r *http.Request) {
	c, e := s.chainOf(r)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	q := &esReq{chainReq: c, w: w}
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		q.notOK("Invalid request: %v", err)
		return
	}
	q.form = r.Form
	if !q.chainIDMatches() { // etherscan_v2.go
		return
	}
	module, action := q.get("module"), q.get("action")
	s.m.etherscan.WithLabelValues(esLabels(module, action)).Inc()
	switch serve, ok := esServe[module][action]; {
	case ok:
		serve(q)
	case esServe[module] == nil:
		q.notOK("Missing Or invalid Module name (this API serves account, logs, block, proxy, transaction, stats and contract)")
	default:
		q.notOK("Missing Or invalid Action name (module %s serves %s)", module, strings.Join(esActions[module], ", "))
	}
}

// etherscanWindow is Etherscan's result window: page × offset at most.
const etherscanWindow = 10000

// paging parses page and offset as Etherscan does; without either, the
// first api.etherscan_max_records records.
func (q *esReq) paging() (limit, skip int, ok bool) {
	max := q.s.cfg.EtherscanMaxRecords
	page, offset := 1, max
	var err error
	if q.has("page") {
		if page, err = strconv.Atoi(q.get("page")); err != nil || page < 1 {
			q.notOK("Invalid page: %q is not a whole number of at least 1", clip(q.get("page")))
			return 0, 0, false
		}
	}
	if q.has("offset") {
		if offset, err = strconv.Atoi(q.get("offset")); err != nil || offset < 1 {
			q.notOK("Invalid offset: %q is not a whole number of at least 1", clip(q.get("offset")))
			return 0, 0, false
		}
	}
	if offset > max {
		q.notOK("Invalid offset: %d is above the most records per page, %d (api.etherscan_max_records)", offset, max)
		return 0, 0, false
	}
	if page*offset > etherscanWindow {
		q.notOK("Result window is too large, PageNo x Offset size must be less than or equal to %d", etherscanWindow)
		return 0, 0, false
	}
	return offset, (page - 1) * offset, true
}

// blockParam parses a block number parameter: decimal, or "latest" (the
// watermark). ok is false when absent.
func (q *esReq) blockParam(name string, v view) (n uint64, given, ok bool) {
	s := q.get(name)
	switch s {
	case "":
		return 0, false, true
	case "latest":
		return v.Watermark, true, true
	}
	h, e := parseHeight(name, s)
	if e != nil {
		q.notOK("Invalid %s: %q is not a decimal block number or latest", name, clip(s))
		return 0, true, false
	}
	return h, true, true
}

// rangeOf resolves a start and an end block parameter to served heights;
// done is true when the answer was already sent.
func (q *esReq) rangeOf(startName, endName string, v view) (lo, hi uint64, ok bool) {
	start, hasStart, ok := q.blockParam(startName, v)
	if !ok {
		return 0, 0, false
	}
	end, hasEnd, ok := q.blockParam(endName, v)
	if !ok {
		return 0, 0, false
	}
	if hasStart && hasEnd && start > end {
		q.notOK("Invalid block range: %s %d is above %s %d", startName, start, endName, end)
		return 0, 0, false
	}
	if hasStart && v.IsPruned(start) {
		q.notOK("Blocks up to %d are pruned from this index; ask from %s %d on", v.Pruned, startName, v.Pruned+1)
		return 0, 0, false
	}
	lo = max(start, v.Lowest())
	hi = v.Watermark
	if hasEnd && end < hi {
		hi = end
	}
	return lo, hi, true
}

func (q *esReq) view() (view, bool) {
	v, e := q.viewOf()
	if e != nil {
		q.failed(e)
		return view{}, false
	}
	return v, true
}

// blockTimes reads the timestamps of a few heights (not the blocks' raw
// JSON).
func (s *Server) blockTimes(ctx context.Context, id string, heights []uint64) (map[uint64]uint64, error) {
	bts, err := s.store.Chain.BlockTimes(ctx, id, heights)
	if err != nil {
		return nil, err
	}
	out := make(map[uint64]uint64, len(bts))
	for n, bt := range bts {
		out[n] = bt.Timestamp
	}
	return out, nil
}
