package api

import (
	"net/http"

	"github.com/tideline-dev/tideline/pkg/chain"
	"github.com/tideline-dev/tideline/pkg/config"
)

// Transactions: one by hash (also the Etherscan proxy's look-up).

func (s *Server) txByHash(r *http.Request) (any, *apiError) {
	id, ch, e := s.chainOf(r)
	if e != nil {
		return nil, e
	}
	hash, e := parseHash("hash", r.PathValue("hash"))
	if e != nil {
		return nil, e
	}
	if _, e := queryParams(r.URL); e != nil {
		return nil, e
	}
	tx, e := s.servedTx(r, id, ch, hash)
	if e != nil {
		return nil, e
	}
	return transactionOf(tx), nil
}

// servedTx finds a transaction by hash: the first canonical position by
// height among the served heights, checked against the row itself.
func (s *Server) servedTx(r *http.Request, id string, ch config.Chain, hash string) (chain.Transaction, *apiError) {
	v, e := s.viewOf(r, id, ch)
	if e != nil {
		return chain.Transaction{}, e
	}
	if !v.HasWatermark {
		return chain.Transaction{}, notFound("no transaction %s: nothing is indexed yet", hash)
	}
	ps, err := s.store.TxPositionsByHash(r.Context(), id, hash, v.Lowest(), v.Watermark)
	if err != nil {
		return chain.Transaction{}, fromStore(err)
	}
	txs, err := s.store.TransactionsAt(r.Context(), id, ps)
	if err != nil {
		return chain.Transaction{}, fromStore(err)
	}
	for _, tx := range txs { // ascending by height
		if tx.Hash == hash {
			return tx, nil
		}
	}
	return chain.Transaction{}, notFound("no canonical transaction %s at or below the watermark %d", hash, v.Watermark)
}
