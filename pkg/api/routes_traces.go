package api

import (
	"net/http"
	"slices"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/storage"
	"github.com/tideline-dev/tideline/pkg/stream"
)

// Call traces (internal transactions): a transaction's call tree, and an
// address's internal transactions, newest first. A height whose traces
// are not indexed (the chain is indexed without traces, or the traces
// backfill has not reached it) is not answered as if it had no internal
// transactions: the call tree says so (404, or 503 while the backfill
// may still bring it).

// TxTrace is a transaction's call tree: its frames depth first, the
// top-level call first.
type TxTrace struct {
	TxHash      string         `json:"tx_hash"`
	BlockNumber uint64         `json:"block_number"`
	BlockHash   string         `json:"block_hash"`
	TxIndex     uint32         `json:"tx_index"`
	Frames      []stream.Frame `json:"frames"`
}

// txTrace answers GET /v1/chains/{id}/txs/{hash}/trace.
func (s *Server) txTrace(r *http.Request) (any, *apiError) {
	q, e := s.request(r, pathHash)
	if e != nil {
		return nil, e
	}
	tx, e := q.servedTx(q.hash)
	if e != nil {
		return nil, e
	}
	fs, e := q.txFrames(tx)
	if e != nil {
		return nil, e
	}
	out := TxTrace{TxHash: tx.Hash, BlockNumber: tx.BlockNumber, BlockHash: tx.BlockHash, TxIndex: tx.Index, Frames: []stream.Frame{}}
	for _, f := range fs {
		out.Frames = append(out.Frames, stream.FrameOf(f))
	}
	return out, nil
}

// txFrames reads a served transaction's call frames, depth first from the
// top-level call; the error says why there are none (not traced, being
// rewritten by a reorganisation).
func (c chainReq) txFrames(tx chaindata.Transaction) ([]chaindata.Trace, *apiError) {
	if e := c.traced(tx.BlockNumber); e != nil {
		return nil, e
	}
	fs, err := c.s.store.Traces.TxTraces(c.r.Context(), c.id, storage.Position{Block: tx.BlockNumber, Index: tx.Index})
	if err != nil {
		return nil, fromStore(err)
	}
	for _, f := range fs {
		if f.TxHash != tx.Hash || f.BlockHash != tx.BlockHash {
			return nil, unavailable("the trace of %s is being rewritten (a reorganisation); retry", tx.Hash)
		}
	}
	if len(fs) == 0 {
		return nil, unavailable("the trace of %s is not stored although its height is marked traced; retry", tx.Hash)
	}
	return fs, nil
}

// traced answers whether a height's traces are indexed: nil, or the error
// that says why not.
func (c chainReq) traced(h uint64) *apiError {
	ts, err := c.s.store.Traces.TracedHeights(c.r.Context(), c.id, []uint64{h})
	if err != nil {
		return fromStore(err)
	}
	if ts[h] {
		return nil
	}
	if c.ch.Traces.Enabled() {
		return unavailable("the traces of height %d are not indexed yet: the traces backfill has not reached it (indexer status shows where it is)", h)
	}
	return notFound("the traces of height %d are not indexed: this chain is indexed without traces (its traces setting is off)", h)
}

// addressInternalTxs answers GET /v1/chains/{id}/addresses/{address}/internal-txs.
func (s *Server) addressInternalTxs(r *http.Request) (any, *apiError) {
	q, e := s.request(r, pathAddress, "from", "to", "limit", "cursor", "all")
	if e != nil {
		return nil, e
	}
	w, e := q.window()
	if e != nil {
		return nil, e
	}
	all, e := q.p.optBool("all")
	if e != nil {
		return nil, e
	}
	limit, e := q.p.limit(defaultPage, s.cfg.MaxPageSize)
	if e != nil {
		return nil, e
	}
	after, e := q.p.traceCursor(cursorInternalTxs)
	if e != nil {
		return nil, e
	}
	v, e := q.viewOf()
	if e != nil {
		return nil, e
	}
	from, to, ok, e := w.clip(v)
	if e != nil {
		return nil, e
	}
	out := page[stream.InternalTx]{Items: []stream.InternalTx{}, Watermark: v.Watermark}
	if !ok {
		return out, nil
	}
	ps, err := s.store.Traces.AddressTracePositions(r.Context(), q.id, storage.AddressTraceQuery{
		Address: q.address, From: from, To: to, Desc: true, All: all, After: after, Limit: limit + 1,
	})
	if err != nil {
		return nil, fromStore(err)
	}
	more := len(ps) > limit
	if more {
		ps = ps[:limit]
	}
	fs, err := s.store.Traces.TracesAt(r.Context(), q.id, ps)
	if err != nil {
		return nil, fromStore(err)
	}
	for _, f := range slices.Backward(fs) { // newest first
		if f.From == q.address || f.To == q.address { // a stale look-up row is skipped
			out.Items = append(out.Items, stream.InternalTxOf(f))
		}
	}
	if more {
		c := encodeTraceCursor(cursorInternalTxs, ps[len(ps)-1])
		out.NextCursor = &c
	}
	return out, nil
}
