package api

import (
	"slices"
	"strconv"
	"strings"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/storage"
)

// account/txlistinternal: internal transactions, as Etherscan lists them,
// by address (with startblock, endblock, page, offset, sort), by txhash
// (the transaction's), or by block range (startblock and endblock, no
// address). Listed are the inner frames Etherscan lists: value moved, a
// contract created or destroyed (`transfers` in address_traces; every
// frame is in the REST routes). Numbers are decimal strings; `to` is ""
// and contractAddress the created contract for a creation; `input` is ""
// as Etherscan gives it; `type` is the frame's type (call, create,
// create2, selfdestruct, …); traceId its trace address joined by "_";
// isError "1" when it or an ancestor failed (its effects were undone),
// errCode its own error's words.

// esInternalTx is an internal transaction of account/txlistinternal.
// By txhash, Etherscan leaves out hash and traceId (esInternalTxOfHash).
type esInternalTx struct {
	BlockNumber     string `json:"blockNumber"`
	TimeStamp       string `json:"timeStamp"`
	Hash            string `json:"hash,omitempty"`
	From            string `json:"from"`
	To              string `json:"to"`
	Value           string `json:"value"`
	ContractAddress string `json:"contractAddress"`
	Input           string `json:"input"`
	Type            string `json:"type"`
	Gas             string `json:"gas"`
	GasUsed         string `json:"gasUsed"`
	TraceID         string `json:"traceId,omitempty"`
	IsError         string `json:"isError"`
	ErrCode         string `json:"errCode"`
}

func esInternalTxOf(t chaindata.Trace, ts uint64, byHash bool) esInternalTx {
	u := func(n uint64) string { return strconv.FormatUint(n, 10) }
	out := esInternalTx{
		BlockNumber: u(t.BlockNumber), TimeStamp: u(ts), From: t.From, To: t.To, Value: t.Value,
		Type: string(t.Type), Gas: u(t.Gas), GasUsed: u(t.GasUsed), IsError: "0", ErrCode: t.Error,
	}
	if t.Type.IsCreation() {
		out.To, out.ContractAddress = "", t.To
	}
	if t.Reverted {
		out.IsError = "1"
	}
	if !byHash {
		ids := make([]string, len(t.Address))
		for i, a := range t.Address {
			ids[i] = strconv.FormatUint(uint64(a), 10)
		}
		out.Hash, out.TraceID = t.TxHash, strings.Join(ids, "_")
	}
	return out
}

func (q *esReq) txlistInternal() {
	desc, ok := q.sortParam()
	if !ok {
		return
	}
	limit, skip, ok := q.paging()
	if !ok {
		return
	}
	addr, hash := q.get("address"), q.get("txhash")
	switch {
	case hash != "" && addr != "":
		q.notOK("Give address or txhash, not both")
		return
	case hash != "":
		q.internalByHash(hash, limit, skip, desc)
		return
	case addr != "":
		if _, e := parseAddress("address", addr); e != nil {
			q.notOK("Invalid address format: %s", e.Message)
			return
		}
	case !q.has("startblock") || !q.has("endblock"):
		q.notOK("Give an address, a txhash, or a block range (startblock and endblock)")
		return
	}
	_, lo, hi, ok := q.blockRange()
	if !ok {
		return
	}
	ctx := q.r.Context()
	var frames []chaindata.Trace
	var err error
	if addr == "" {
		if hi-lo+1 > q.s.cfg.MaxLogRange {
			q.notOK("Block range too large: %d blocks, at most %d (api.max_log_range)", hi-lo+1, q.s.cfg.MaxLogRange)
			return
		}
		frames, err = q.s.store.Traces.TracesInRange(ctx, q.id, storage.TraceRangeQuery{From: lo, To: hi, Desc: desc, Limit: limit, Offset: skip})
	} else {
		addr = strings.ToLower(addr)
		var ps []storage.TracePosition
		ps, err = q.s.store.Traces.AddressTracePositions(ctx, q.id, storage.AddressTraceQuery{
			Address: addr, From: lo, To: hi, Desc: desc, Limit: limit, Offset: skip,
		})
		if err == nil {
			frames, err = q.s.store.Traces.TracesAt(ctx, q.id, ps)
		}
		frames = framesOf(frames, addr, desc)
	}
	if err != nil {
		q.failed(fromStore(err))
		return
	}
	q.answerInternal(frames, false)
}

// framesOf keeps the frames that name addr (a look-up row that no longer
// matches its frame is skipped), in the order asked (TracesAt reads
// ascending).
func framesOf(fs []chaindata.Trace, addr string, desc bool) []chaindata.Trace {
	out := fs[:0]
	for _, f := range fs {
		if f.From == addr || f.To == addr {
			out = append(out, f)
		}
	}
	if desc {
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	}
	return out
}

// internalByHash lists a transaction's internal transactions.
func (q *esReq) internalByHash(hash string, limit, skip int, desc bool) {
	h, e := parseHash("txhash", hash)
	if e != nil {
		q.notOK("Invalid txhash format: %s", e.Message)
		return
	}
	tx, e := q.servedTx(h)
	if e != nil {
		q.failed(e)
		return
	}
	if e := q.traced(tx.BlockNumber); e != nil {
		q.failed(e)
		return
	}
	fs, err := q.s.store.Traces.TxTraces(q.r.Context(), q.id, storage.Position{Block: tx.BlockNumber, Index: tx.Index})
	if err != nil {
		q.failed(fromStore(err))
		return
	}
	listed := fs[:0]
	for _, f := range fs {
		if f.Depth() > 0 && f.Transfers() {
			listed = append(listed, f)
		}
	}
	if desc {
		for i, j := 0, len(listed)-1; i < j; i, j = i+1, j-1 {
			listed[i], listed[j] = listed[j], listed[i]
		}
	}
	listed = listed[min(skip, len(listed)):]
	q.answerInternal(listed[:min(limit, len(listed))], true)
}

// answerInternal answers frames with their blocks' times.
func (q *esReq) answerInternal(frames []chaindata.Trace, byHash bool) {
	if len(frames) == 0 {
		q.empty("No transactions found")
		return
	}
	hs := make([]uint64, 0, len(frames))
	for _, f := range frames {
		hs = append(hs, f.BlockNumber)
	}
	slices.Sort(hs)
	times, err := q.s.blockTimes(q.r.Context(), q.id, slices.Compact(hs))
	if err != nil {
		q.failed(fromStore(err))
		return
	}
	out := make([]esInternalTx, 0, len(frames))
	for _, f := range frames {
		out = append(out, esInternalTxOf(f, times[f.BlockNumber], byHash))
	}
	q.ok(out)
}
