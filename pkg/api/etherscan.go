package api

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/tideline-dev/tideline/pkg/chain"
	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/storage"
)

// The Etherscan-compatible subset at /v1/chains/{id}/etherscan/api: the
// same query parameters, envelope and field formats as Etherscan's API, so
// that tools written for it work against tideline by changing the base
// URL. Served: account/txlist, logs/getLogs, block/getblocknobytime and
// proxy/eth_blockNumber, eth_getBlockByNumber, eth_getTransactionByHash,
// eth_getTransactionReceipt.
//
// Status codes, as Etherscan: a request the client got wrong is answered
// with HTTP 200 and `{"status":"0","message":"NOTOK","result":"Error! …"}`
// (Etherscan clients read the envelope, not the status); a proxy call it
// got wrong is a JSON-RPC error object, also with 200. What is tideline's
// fault or the database's (a timeout, a failed read) keeps its HTTP status
// (503, 500) with the same envelope, so monitoring sees it. An unknown
// chain in the path is the REST 404.
//
// Formats, as Etherscan documents them: the account module gives numbers
// as decimal strings; the logs module gives them as hex strings, where
// Etherscan writes zero as "0x"; the proxy module answers what a node
// answers (tideline's copy of it). "latest" is the watermark: tideline
// serves nothing above it.

// envelope is Etherscan's answer for the account, logs and block modules.
type envelope struct {
	Status  string `json:"status"`
	Message string `json:"message"`
	Result  any    `json:"result"`
}

// rpcAnswer and rpcFailure are the proxy module's JSON-RPC answers.
type rpcAnswer struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      int             `json:"id"`
	Result  json.RawMessage `json:"result"`
}

type rpcFailure struct {
	JSONRPC string   `json:"jsonrpc"`
	ID      int      `json:"id"`
	Error   rpcError `json:"error"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// JSON-RPC error codes of the proxy module.
const (
	rpcInvalidParams = -32602
	rpcServerError   = -32000
	rpcInternal      = -32603
)

// esReq is one Etherscan request.
type esReq struct {
	s    *Server
	w    http.ResponseWriter
	r    *http.Request
	id   string
	ch   config.Chain
	form url.Values
}

func (q *esReq) get(name string) string { return strings.TrimSpace(q.form.Get(name)) }
func (q *esReq) has(name string) bool   { return q.get(name) != "" }

// notOK is Etherscan's answer to a request it cannot serve.
func (q *esReq) notOK(format string, args ...any) {
	writeJSON(q.w, http.StatusOK, envelope{Status: "0", Message: "NOTOK", Result: "Error! " + fmt.Sprintf(format, args...)})
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

func (q *esReq) rpcResult(v json.RawMessage) {
	if v == nil {
		v = json.RawMessage("null")
	}
	writeJSON(q.w, http.StatusOK, rpcAnswer{JSONRPC: "2.0", ID: 1, Result: v})
}

func (q *esReq) rpcFail(status, code int, format string, args ...any) {
	writeJSON(q.w, status, rpcFailure{JSONRPC: "2.0", ID: 1, Error: rpcError{Code: code, Message: fmt.Sprintf(format, args...)}})
}

func (q *esReq) rpcFailed(e *apiError) {
	if e.Status < 500 {
		q.rpcFail(http.StatusOK, rpcServerError, "%s", e.Message)
		return
	}
	q.s.logFailure(q.r, e)
	q.rpcFail(e.Status, rpcInternal, "%s", e.Message)
}

// Known module and action names, for the metric's labels.
var esActions = map[string][]string{
	"account": {"txlist"},
	"logs":    {"getLogs"},
	"block":   {"getblocknobytime"},
	"proxy":   {"eth_blockNumber", "eth_getBlockByNumber", "eth_getTransactionByHash", "eth_getTransactionReceipt"},
}

func esLabels(module, action string) (string, string) {
	actions, ok := esActions[module]
	if !ok {
		return "other", "other"
	}
	for _, a := range actions {
		if a == action {
			return module, action
		}
	}
	return module, "other"
}

func (s *Server) etherscan(w http.ResponseWriter, r *http.Request) {
	id, ch, e := s.chainOf(r)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	q := &esReq{s: s, w: w, r: r, id: id, ch: ch}
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		q.notOK("Invalid request: %v", err)
		return
	}
	q.form = r.Form
	module, action := q.get("module"), q.get("action")
	s.m.etherscan.WithLabelValues(esLabels(module, action)).Inc()
	switch {
	case module == "account" && action == "txlist":
		q.txlist()
	case module == "logs" && action == "getLogs":
		q.getLogs()
	case module == "block" && action == "getblocknobytime":
		q.blockByTime()
	case module == "proxy" && action == "eth_blockNumber":
		q.blockNumber()
	case module == "proxy" && action == "eth_getBlockByNumber":
		q.blockByNumber()
	case module == "proxy" && action == "eth_getTransactionByHash":
		q.transactionByHash()
	case module == "proxy" && action == "eth_getTransactionReceipt":
		q.transactionReceipt()
	case esActions[module] == nil:
		q.notOK("Missing Or invalid Module name (this API serves account, logs, block and proxy)")
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
	v, e := q.s.viewOf(q.r, q.id, q.ch)
	if e != nil {
		q.failed(e)
		return view{}, false
	}
	return v, true
}

// esTx is a transaction of account/txlist, Etherscan's fields and formats.
type esTx struct {
	BlockNumber       string `json:"blockNumber"`
	TimeStamp         string `json:"timeStamp"`
	Hash              string `json:"hash"`
	Nonce             string `json:"nonce"`
	BlockHash         string `json:"blockHash"`
	TransactionIndex  string `json:"transactionIndex"`
	From              string `json:"from"`
	To                string `json:"to"`
	Value             string `json:"value"`
	Gas               string `json:"gas"`
	GasPrice          string `json:"gasPrice"`
	IsError           string `json:"isError"`
	TxReceiptStatus   string `json:"txreceipt_status"`
	Input             string `json:"input"`
	ContractAddress   string `json:"contractAddress"`
	CumulativeGasUsed string `json:"cumulativeGasUsed"`
	GasUsed           string `json:"gasUsed"`
	Confirmations     string `json:"confirmations"`
	MethodID          string `json:"methodId"`
	FunctionName      string `json:"functionName"`
}

func (q *esReq) txlist() {
	addr := q.get("address")
	if _, e := parseAddress("address", addr); e != nil {
		q.notOK("Invalid address format: %s", e.Message)
		return
	}
	addr = strings.ToLower(addr)
	desc := false
	switch q.get("sort") {
	case "", "asc":
	case "desc":
		desc = true
	default:
		q.notOK("Invalid sort: %q is neither asc nor desc", clip(q.get("sort")))
		return
	}
	limit, skip, ok := q.paging()
	if !ok {
		return
	}
	v, ok := q.view()
	if !ok {
		return
	}
	lo, hi, ok := q.rangeOf("startblock", "endblock", v)
	if !ok {
		return
	}
	if !v.HasWatermark || lo > hi {
		q.empty("No transactions found")
		return
	}
	ctx := q.r.Context()
	ps, err := q.s.store.AddressTxPositions(ctx, q.id, storage.AddressTxQuery{
		Address: addr, From: lo, To: hi, Desc: desc, Limit: limit, Offset: skip,
	})
	if err != nil {
		q.failed(fromStore(err))
		return
	}
	// The transactions and their blocks' times are two reads of the same
	// positions: sent together, an answer waits for the slower one only.
	var (
		txs   []chain.Transaction
		times map[uint64]uint64
	)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		txs, err = q.s.store.TransactionsAt(gctx, q.id, ps)
		return err
	})
	g.Go(func() (err error) {
		times, err = q.s.blockTimes(gctx, q.id, heightsOfPositions(ps))
		return err
	})
	if err := g.Wait(); err != nil {
		q.failed(fromStore(err))
		return
	}
	out := make([]esTx, 0, len(txs))
	for _, tx := range txs {
		if tx.From != addr && tx.To != addr && tx.ContractAddress != addr {
			continue // a look-up row that no longer matches its transaction
		}
		out = append(out, esTxOf(tx, times[tx.BlockNumber], v.Watermark))
	}
	if desc { // TransactionsAt reads in ascending order
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	}
	if len(out) == 0 {
		q.empty("No transactions found")
		return
	}
	q.ok(out)
}

// heightsOfPositions lists the distinct heights of positions.
func heightsOfPositions(ps []storage.Position) []uint64 {
	hs := make([]uint64, 0, len(ps))
	for _, p := range ps {
		hs = append(hs, p.Block)
	}
	slices.Sort(hs)
	return slices.Compact(hs)
}

// blockTimes reads the timestamps of a few heights (not the blocks' raw
// JSON).
func (s *Server) blockTimes(ctx context.Context, id string, heights []uint64) (map[uint64]uint64, error) {
	bts, err := s.store.BlockTimes(ctx, id, heights)
	if err != nil {
		return nil, err
	}
	out := make(map[uint64]uint64, len(bts))
	for n, bt := range bts {
		out[n] = bt.Timestamp
	}
	return out, nil
}

// rawString reads a string field of a stored Raw object ("" if absent).
func rawString(raw []byte, key string) string {
	o, err := objectOf(raw)
	if err != nil {
		return ""
	}
	var s string
	if json.Unmarshal(o[key], &s) != nil {
		return ""
	}
	return s
}

// hexToDecimal turns a JSON-RPC quantity into a decimal string ("" if it
// is not one).
func hexToDecimal(h string) string {
	if len(h) < 3 || h[:2] != "0x" {
		return ""
	}
	n, ok := new(big.Int).SetString(h[2:], 16)
	if !ok {
		return ""
	}
	return n.String()
}

func esTxOf(tx chain.Transaction, ts, watermark uint64) esTx {
	input := rawString(tx.Raw, "input")
	if input == "" {
		input = "0x"
	}
	method := "0x"
	if len(input) >= 10 {
		method = input[:10]
	}
	gasPrice := tx.EffectiveGasPrice
	if gasPrice == "" {
		gasPrice = tx.GasPrice
	}
	isError, status := "0", "1"
	if tx.Status == 0 {
		isError, status = "1", "0"
	}
	if o, err := objectOf(tx.ReceiptRaw); err == nil {
		if _, root := o["root"]; root {
			status = "" // pre-Byzantium: the receipt has no status
		}
	}
	u := func(n uint64) string { return strconv.FormatUint(n, 10) }
	return esTx{
		BlockNumber: u(tx.BlockNumber), TimeStamp: u(ts), Hash: tx.Hash, Nonce: u(tx.Nonce),
		BlockHash: tx.BlockHash, TransactionIndex: u(uint64(tx.Index)), From: tx.From, To: tx.To,
		Value: tx.Value, Gas: u(tx.Gas), GasPrice: gasPrice, IsError: isError, TxReceiptStatus: status,
		Input: input, ContractAddress: tx.ContractAddress,
		CumulativeGasUsed: hexToDecimal(rawString(tx.ReceiptRaw, "cumulativeGasUsed")),
		GasUsed:           u(tx.GasUsed), Confirmations: u(watermark - tx.BlockNumber + 1),
		MethodID: method, FunctionName: "",
	}
}

// esLog is a log of logs/getLogs, Etherscan's fields and formats.
type esLog struct {
	Address          string   `json:"address"`
	Topics           []string `json:"topics"`
	Data             string   `json:"data"`
	BlockNumber      string   `json:"blockNumber"`
	BlockHash        string   `json:"blockHash"`
	TimeStamp        string   `json:"timeStamp"`
	GasPrice         string   `json:"gasPrice"`
	GasUsed          string   `json:"gasUsed"`
	LogIndex         string   `json:"logIndex"`
	TransactionHash  string   `json:"transactionHash"`
	TransactionIndex string   `json:"transactionIndex"`
}

// esHex is a logs-module number: hex, with zero written "0x" as
// Etherscan writes it.
func esHex(n uint64) string {
	if n == 0 {
		return "0x"
	}
	return fmt.Sprintf("0x%x", n)
}

// esHexBig is esHex of a stored decimal amount.
func esHexBig(dec string) string {
	n, ok := new(big.Int).SetString(dec, 10)
	if !ok || n.Sign() == 0 {
		return "0x"
	}
	return "0x" + n.Text(16)
}

// topicFilter parses topic0..topic3 and the topicX_Y_opr operators. The
// given topics are combined in order, each operator joining two topics
// given next to each other (topic0_2_opr joins topic0 and topic2 when
// topic1 is not given); an operator defaults to and.
func (q *esReq) topicFilter() ([]storage.TopicTerm, []bool, bool) {
	var terms []storage.TopicTerm
	for i := range 4 {
		name := fmt.Sprintf("topic%d", i)
		if !q.has(name) {
			continue
		}
		t, e := parseHash(name, q.get(name))
		if e != nil {
			q.notOK("Invalid %s: %s", name, e.Message)
			return nil, nil, false
		}
		terms = append(terms, storage.TopicTerm{Position: i, Value: t})
	}
	used := map[string]bool{}
	var ors []bool
	for k := 1; k < len(terms); k++ {
		name := fmt.Sprintf("topic%d_%d_opr", terms[k-1].Position, terms[k].Position)
		used[name] = true
		switch q.get(name) {
		case "", "and":
			ors = append(ors, false)
		case "or":
			ors = append(ors, true)
		default:
			q.notOK("Invalid %s: %q is neither and nor or", name, clip(q.get(name)))
			return nil, nil, false
		}
	}
	for i := range 4 {
		for j := i + 1; j < 4; j++ {
			name := fmt.Sprintf("topic%d_%d_opr", i, j)
			if q.has(name) && !used[name] {
				q.notOK("Invalid %s: it joins topic%d and topic%d, which are not both given next to each other", name, i, j)
				return nil, nil, false
			}
		}
	}
	return terms, ors, true
}

func (q *esReq) getLogs() {
	var f storage.LogFilter
	if q.has("address") {
		a, e := parseAddress("address", q.get("address"))
		if e != nil {
			q.notOK("Invalid address format: %s", e.Message)
			return
		}
		f.Address = a
	}
	terms, ors, ok := q.topicFilter()
	if !ok {
		return
	}
	f.Topics, f.Or = terms, ors
	if f.Address == "" && len(f.Topics) == 0 {
		q.notOK("Missing address or topic: give an address, a topic0-3 or both")
		return
	}
	if !q.has("fromBlock") {
		q.notOK("Missing fromBlock: the first block to search (at most %d blocks per query, api.max_log_range)", q.s.cfg.MaxLogRange)
		return
	}
	limit, skip, ok := q.paging()
	if !ok {
		return
	}
	v, ok := q.view()
	if !ok {
		return
	}
	from, _, ok := q.blockParam("fromBlock", v)
	if !ok {
		return
	}
	to, hasTo, ok := q.blockParam("toBlock", v)
	if !ok {
		return
	}
	if !hasTo {
		to = v.Watermark
	}
	if from > to {
		if hasTo {
			q.notOK("Invalid block range: fromBlock %d is above toBlock %d", from, to)
		} else {
			q.empty("No records found")
		}
		return
	}
	if to-from >= q.s.cfg.MaxLogRange {
		q.notOK("Block range too wide: fromBlock %d to toBlock %d spans %d blocks, more than %d (api.max_log_range)",
			from, to, to-from+1, q.s.cfg.MaxLogRange)
		return
	}
	if v.IsPruned(from) {
		q.notOK("Blocks up to %d are pruned from this index; ask from fromBlock %d on", v.Pruned, v.Pruned+1)
		return
	}
	from, to = max(from, v.Lowest()), min(to, v.Watermark)
	if !v.HasWatermark || from > to {
		q.empty("No records found")
		return
	}
	ctx := q.r.Context()
	logs, err := q.s.store.Logs(ctx, q.id, storage.LogQuery{From: from, To: to, Filter: f, Limit: limit, Offset: skip})
	if err != nil {
		q.failed(fromStore(err))
		return
	}
	if len(logs) == 0 {
		q.empty("No records found")
		return
	}
	var heights []uint64
	var ps []storage.Position
	for i, l := range logs {
		if i == 0 || logs[i-1].BlockNumber != l.BlockNumber {
			heights = append(heights, l.BlockNumber)
		}
		if i == 0 || logs[i-1].BlockNumber != l.BlockNumber || logs[i-1].TxIndex != l.TxIndex {
			ps = append(ps, storage.Position{Block: l.BlockNumber, Index: l.TxIndex})
		}
	}
	// Times and fees are two independent reads: sent together.
	var (
		times map[uint64]uint64
		fees  map[storage.Position]storage.TxFee
	)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		times, err = q.s.blockTimes(gctx, q.id, heights)
		return err
	})
	g.Go(func() (err error) {
		fees, err = q.s.store.TransactionFees(gctx, q.id, ps)
		return err
	})
	if err := g.Wait(); err != nil {
		q.failed(fromStore(err))
		return
	}
	out := make([]esLog, 0, len(logs))
	for _, l := range logs {
		tx := fees[storage.Position{Block: l.BlockNumber, Index: l.TxIndex}]
		price := tx.EffectiveGasPrice
		if price == "" {
			price = tx.GasPrice
		}
		topics := l.Topics
		if topics == nil {
			topics = []string{}
		}
		out = append(out, esLog{
			Address: l.Address, Topics: topics, Data: l.Data, BlockNumber: esHex(l.BlockNumber), BlockHash: l.BlockHash,
			TimeStamp: esHex(times[l.BlockNumber]), GasPrice: esHexBig(price), GasUsed: esHex(tx.GasUsed),
			LogIndex: esHex(uint64(l.LogIndex)), TransactionHash: l.TxHash, TransactionIndex: esHex(uint64(l.TxIndex)),
		})
	}
	q.ok(out)
}

func (q *esReq) blockByTime() {
	ts := q.get("timestamp")
	t, e := parseHeight("timestamp", ts)
	if e != nil {
		q.notOK("Invalid timestamp: %q is not unix seconds", clip(ts))
		return
	}
	var last bool
	switch q.get("closest") {
	case "before":
		last = true
	case "after":
	default:
		q.notOK("Invalid closest: %q is neither before nor after", clip(q.get("closest")))
		return
	}
	v, ok := q.view()
	if !ok {
		return
	}
	if !v.HasWatermark {
		q.notOK("No closest block found")
		return
	}
	h, bt, found, err := q.s.store.BlockAtTime(q.r.Context(), q.id, t, last, v.Lowest(), v.Watermark)
	if err != nil {
		q.failed(fromStore(err))
		return
	}
	if !found {
		q.notOK("No closest block found")
		return
	}
	// block_by_time says where; the block row must still have that time.
	times, err := q.s.blockTimes(q.r.Context(), q.id, []uint64{h})
	if err != nil {
		q.failed(fromStore(err))
		return
	}
	if got, ok := times[h]; !ok || got != bt {
		q.failed(unavailable("block %d is being rewritten (a reorganisation); retry", h))
		return
	}
	q.ok(strconv.FormatUint(h, 10))
}

func (q *esReq) blockNumber() {
	v, e := q.s.viewOf(q.r, q.id, q.ch)
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
	v, e := q.s.viewOf(q.r, q.id, q.ch)
	if e != nil {
		q.rpcFailed(e)
		return
	}
	tag := q.get("tag")
	var h uint64
	switch tag {
	case "latest":
		if !v.HasWatermark {
			q.rpcResult(nil)
			return
		}
		h = v.Watermark
	case "earliest":
		h = v.Lowest()
	case "":
		q.rpcFail(http.StatusOK, rpcInvalidParams, "missing tag: a block number in hex (0x10d4f), latest or earliest")
		return
	default:
		n, ok := quantityParam(tag)
		if !ok {
			q.rpcFail(http.StatusOK, rpcInvalidParams, "invalid argument 0: tag %q is not a hex block number (0x10d4f), latest or earliest", clip(tag))
			return
		}
		h = n
	}
	if v.IsPruned(h) {
		q.rpcFail(http.StatusOK, rpcServerError, "block %d was pruned: this index keeps heights above %d only", h, v.Pruned)
		return
	}
	if !v.Serves(h) {
		q.rpcResult(nil) // as a node answers for a block it does not have
		return
	}
	ctx := q.r.Context()
	bs, err := q.s.store.BlocksAt(ctx, q.id, []uint64{h})
	if err != nil {
		q.rpcFailed(fromStore(err))
		return
	}
	if len(bs) == 0 {
		q.rpcResult(nil)
		return
	}
	txs, err := q.s.store.BlockTransactions(ctx, q.id, h, 0, int(bs[0].TxCount)+1)
	if err != nil {
		q.rpcFailed(fromStore(err))
		return
	}
	own := txs[:0]
	for _, tx := range txs {
		if tx.BlockHash == bs[0].Hash {
			own = append(own, tx)
		}
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
func (q *esReq) servedTxParam() (tx chain.Transaction, ok bool) {
	hash, ok := q.txParam()
	if !ok {
		return tx, false
	}
	tx, e := q.s.servedTx(q.r, q.id, q.ch, hash)
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
	logs, err := q.s.store.TxLogs(q.r.Context(), q.id, storage.Position{Block: tx.BlockNumber, Index: tx.Index})
	if err != nil {
		q.rpcFailed(fromStore(err))
		return
	}
	own := logs[:0]
	for _, l := range logs {
		if l.BlockHash == tx.BlockHash && l.TxHash == tx.Hash {
			own = append(own, l)
		}
	}
	out, err := rpcReceipt(tx, own)
	if err != nil {
		q.rpcFailed(fromStore(err))
		return
	}
	q.rpcResult(out)
}
