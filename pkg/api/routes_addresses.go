package api

import (
	"net/http"
	"slices"

	"github.com/tideline-dev/tideline/pkg/storage"
	"github.com/tideline-dev/tideline/pkg/stream"
)

// Addresses: an address's transactions, newest first.

func (s *Server) addressTxs(r *http.Request) (any, *apiError) {
	q, e := s.request(r, pathAddress, "from", "to", "limit", "cursor")
	if e != nil {
		return nil, e
	}
	addr := q.address
	w, e := q.window()
	if e != nil {
		return nil, e
	}
	limit, after, e := q.listing(cursorAddressTxs)
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
	out := page[stream.Transaction]{Items: []stream.Transaction{}, Watermark: v.Watermark}
	if !ok {
		return out, nil
	}
	ps, err := s.store.Chain.AddressTxPositions(r.Context(), q.id, storage.AddressTxQuery{
		Address: addr, From: from, To: to, Desc: true, After: after, Limit: limit + 1,
	})
	if err != nil {
		return nil, fromStore(err)
	}
	more := len(ps) > limit
	if more {
		ps = ps[:limit]
	}
	txs, err := s.store.Chain.TransactionsAt(r.Context(), q.id, ps)
	if err != nil {
		return nil, fromStore(err)
	}
	for _, tx := range slices.Backward(txs) { // newest first
		if tx.From == addr || tx.To == addr || tx.ContractAddress == addr {
			out.Items = append(out.Items, stream.TransactionOf(tx))
		}
	}
	if more {
		c := encodeCursor(cursorAddressTxs, ps[len(ps)-1])
		out.NextCursor = &c
	}
	return out, nil
}
