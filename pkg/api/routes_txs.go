package api

import (
	"net/http"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/stream"
)

// Transactions: one by hash (also the Etherscan proxy's look-up).

func (s *Server) txByHash(r *http.Request) (any, *apiError) {
	q, e := s.request(r, pathHash)
	if e != nil {
		return nil, e
	}
	tx, e := q.servedTx(q.hash)
	if e != nil {
		return nil, e
	}
	return stream.TransactionOf(tx), nil
}

// servedTx finds a transaction by hash: the first canonical position by
// height among the served heights, checked against the row itself.
func (c chainReq) servedTx(hash string) (chaindata.Transaction, *apiError) {
	v, e := c.viewOf()
	if e != nil {
		return chaindata.Transaction{}, e
	}
	if !v.HasWatermark {
		return chaindata.Transaction{}, notFound("no transaction %s: nothing is indexed yet", hash)
	}
	ps, err := c.s.store.Chain.TxPositionsByHash(c.r.Context(), c.id, hash, v.Lowest(), v.Watermark)
	if err != nil {
		return chaindata.Transaction{}, fromStore(err)
	}
	txs, err := c.s.store.Chain.TransactionsAt(c.r.Context(), c.id, ps)
	if err != nil {
		return chaindata.Transaction{}, fromStore(err)
	}
	for _, tx := range txs { // ascending by height
		if tx.Hash == hash {
			return tx, nil
		}
	}
	return chaindata.Transaction{}, notFound("no canonical transaction %s at or below the watermark %d", hash, v.Watermark)
}
