package api

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/storage"
)

// The JSON-RPC route's history methods on blocks, transactions and
// receipts. A block, transaction or receipt the index does not serve is
// null, as a node answers for one it does not have: above the watermark
// (not indexed yet) or unknown. A height below the lowest one served
// (pruned by retention, or below the start height) is an error instead:
// the node has it, and null would say it does not exist.

func (q *rpcReq) chainID(p rpcParams) (json.RawMessage, *rpcError) {
	if e := p.want(0, 0); e != nil {
		return nil, e
	}
	id, e := q.chainNumber()
	if e != nil {
		return nil, e
	}
	return result(quantity(id)), nil
}

// chainNumber is the chain's expected_chain_id, or without one the node's
// answer.
func (q *rpcReq) chainNumber() (uint64, *rpcError) {
	if q.ch.ExpectedChainID != 0 {
		return q.ch.ExpectedChainID, nil
	}
	if q.s.forward == nil {
		return 0, rpcErrorf(rpcServerError, "chain %s has no expected_chain_id configured, so its id is not known here", q.id)
	}
	raw, e := q.forward("eth_chainId", nil)
	if e != nil {
		return 0, e
	}
	var s string
	n, ok := uint64(0), json.Unmarshal(raw, &s) == nil
	if ok {
		n, ok = quantityParam(s)
	}
	if !ok {
		return 0, rpcErrorf(rpcServerError, "the node's chain id %s is not a quantity", clip(string(raw)))
	}
	return n, nil
}

func (q *rpcReq) netVersion(p rpcParams) (json.RawMessage, *rpcError) {
	if e := p.want(0, 0); e != nil {
		return nil, e
	}
	id, e := q.chainNumber()
	if e != nil {
		return nil, e
	}
	return result(strconv.FormatUint(id, 10)), nil
}

func (q *rpcReq) blockNumber(p rpcParams) (json.RawMessage, *rpcError) {
	if e := p.want(0, 0); e != nil {
		return nil, e
	}
	v, e := q.view()
	if e != nil {
		return nil, e
	}
	if !v.HasWatermark {
		return nil, rpcErrorf(rpcServerError, "nothing is indexed yet")
	}
	return result(quantity(v.Watermark)), nil
}

// block reads the served block ref names; found is false for one the
// index does not serve (null).
func (q *rpcReq) block(ref blockRef) (b chaindata.Block, found bool, e *rpcError) {
	v, e := q.view()
	if e != nil {
		return b, false, e
	}
	if !v.HasWatermark {
		return b, false, nil
	}
	var hs []uint64
	switch {
	case ref.hash != "":
		ids, err := q.s.store.Chain.BlockHeightsByHash(q.r.Context(), q.id, ref.hash, v.Lowest(), v.Watermark)
		if err != nil {
			return b, false, q.storeFailed(err)
		}
		hs = ids
	case ref.tag == "latest" || ref.tag == "pending":
		hs = []uint64{v.Watermark}
	case ref.tag == "earliest":
		hs = []uint64{v.Lowest()}
	case ref.tag != "": // safe, finalized: the node says which height
		n, e := q.nodeTagHeight(ref.tag)
		if e != nil {
			return b, false, e
		}
		return q.block(blockRef{number: n})
	case ref.number > v.Watermark:
		return b, false, nil
	case ref.number < v.Lowest():
		return b, false, q.failed(checkHeight(v, "block", ref.number))
	default:
		hs = []uint64{ref.number}
	}
	if len(hs) == 0 {
		return b, false, nil
	}
	bs, err := q.s.store.Chain.BlocksAt(q.r.Context(), q.id, hs)
	if err != nil {
		return b, false, q.storeFailed(err)
	}
	for _, b := range bs {
		// A hash look-up says where; the row must still be that block
		// (a reorganisation may have replaced it since).
		if ref.hash == "" || b.Hash == ref.hash {
			return b, true, nil
		}
	}
	return b, false, nil
}

// blockAnswer is eth_getBlockBy*'s answer.
func (q *rpcReq) blockAnswer(ref blockRef, p rpcParams) (json.RawMessage, *rpcError) {
	full, e := p.boolean(1)
	if e != nil {
		return nil, e
	}
	b, found, e := q.block(ref)
	if e != nil || !found {
		return nil, e
	}
	txs, err := q.ownTransactions(b)
	if err != nil {
		return nil, q.storeFailed(err)
	}
	return q.encoded(rpcBlock(b, txs, full))
}

func (q *rpcReq) blockByNumber(p rpcParams) (json.RawMessage, *rpcError) {
	if e := p.want(1, 2); e != nil {
		return nil, e
	}
	ref, e := p.blockRefParam(0, false)
	if e != nil {
		return nil, e
	}
	return q.blockAnswer(ref, p)
}

func (q *rpcReq) blockByHash(p rpcParams) (json.RawMessage, *rpcError) {
	if e := p.want(1, 2); e != nil {
		return nil, e
	}
	h, e := p.hash(0)
	if e != nil {
		return nil, e
	}
	return q.blockAnswer(blockRef{hash: h}, p)
}

// refArg reads argument 0 of the *ByNumber (byHash false) and *ByHash
// variants.
func refArg(p rpcParams, byHash bool) (blockRef, *rpcError) {
	if byHash {
		h, e := p.hash(0)
		return blockRef{hash: h}, e
	}
	return p.blockRefParam(0, false)
}

// blockArg reads the block argument 0 names (by number or tag, or by
// hash): found is false for one the index does not serve.
func (q *rpcReq) blockArg(p rpcParams, byHash bool) (chaindata.Block, bool, *rpcError) {
	ref, e := refArg(p, byHash)
	if e != nil {
		return chaindata.Block{}, false, e
	}
	return q.block(ref)
}

func (q *rpcReq) txCount(p rpcParams, byHash bool) (json.RawMessage, *rpcError) {
	if e := p.want(1, 1); e != nil {
		return nil, e
	}
	b, found, e := q.blockArg(p, byHash)
	if e != nil || !found {
		return nil, e
	}
	return result(quantity(uint64(b.TxCount))), nil
}

func (q *rpcReq) txCountByNumber(p rpcParams) (json.RawMessage, *rpcError) {
	return q.txCount(p, false)
}
func (q *rpcReq) txCountByHash(p rpcParams) (json.RawMessage, *rpcError) { return q.txCount(p, true) }

// uncleCount counts the block's uncles: the node's list, kept in raw.
func (q *rpcReq) uncleCount(p rpcParams, byHash bool) (json.RawMessage, *rpcError) {
	if e := p.want(1, 1); e != nil {
		return nil, e
	}
	b, found, e := q.blockArg(p, byHash)
	if e != nil || !found {
		return nil, e
	}
	o, err := objectOf(b.Raw)
	var uncles []string
	if err == nil && o["uncles"] != nil {
		err = json.Unmarshal(o["uncles"], &uncles)
	}
	if _, e := q.encoded(nil, err); e != nil {
		return nil, e
	}
	return result(quantity(uint64(len(uncles)))), nil
}

func (q *rpcReq) uncleCountByNumber(p rpcParams) (json.RawMessage, *rpcError) {
	return q.uncleCount(p, false)
}
func (q *rpcReq) uncleCountByHash(p rpcParams) (json.RawMessage, *rpcError) {
	return q.uncleCount(p, true)
}

// tx finds a served transaction by hash; found is false for one the index
// does not serve (null).
func (q *rpcReq) tx(p rpcParams) (tx chaindata.Transaction, found bool, e *rpcError) {
	return q.txFor(p, false)
}

// txFor is tx; forReceipt takes a batch's transactions read ahead for
// receipts only (prefetched.receiptsOnly) too.
func (q *rpcReq) txFor(p rpcParams, forReceipt bool) (tx chaindata.Transaction, found bool, e *rpcError) {
	if e := p.want(1, 1); e != nil {
		return tx, false, e
	}
	hash, e := p.hash(0)
	if e != nil {
		return tx, false, e
	}
	if q.pre != nil && q.pre.hashes[hash] && (forReceipt || !q.pre.receiptsOnly) {
		tx, found := q.pre.txs[hash]
		return tx, found, nil
	}
	tx, ae := q.servedTx(hash)
	switch {
	case ae != nil && ae.Status == http.StatusNotFound:
		return tx, false, nil
	case ae != nil:
		return tx, false, q.failed(ae)
	}
	return tx, true, nil
}

func (q *rpcReq) txByHash(p rpcParams) (json.RawMessage, *rpcError) {
	tx, found, e := q.tx(p)
	if e != nil || !found {
		return nil, e
	}
	return q.encoded(rpcTx(tx))
}

func (q *rpcReq) txByIndex(p rpcParams, byHash bool) (json.RawMessage, *rpcError) {
	if e := p.want(2, 2); e != nil {
		return nil, e
	}
	ref, e := refArg(p, byHash)
	if e != nil {
		return nil, e
	}
	i, e := p.quantity(1)
	if e != nil {
		return nil, e
	}
	b, found, e := q.block(ref)
	if e != nil || !found || i >= uint64(b.TxCount) {
		return nil, e
	}
	txs, err := q.s.store.Chain.TransactionsAt(q.r.Context(), q.id, []storage.Position{{Block: b.Number, Index: uint32(i)}})
	if err != nil {
		return nil, q.storeFailed(err)
	}
	for _, tx := range txs {
		if tx.BlockHash == b.Hash {
			return q.encoded(rpcTx(tx))
		}
	}
	return nil, nil
}

func (q *rpcReq) txByNumberAndIndex(p rpcParams) (json.RawMessage, *rpcError) {
	return q.txByIndex(p, false)
}
func (q *rpcReq) txByHashAndIndex(p rpcParams) (json.RawMessage, *rpcError) {
	return q.txByIndex(p, true)
}

func (q *rpcReq) receipt(p rpcParams) (json.RawMessage, *rpcError) {
	tx, found, e := q.txFor(p, true)
	if e != nil || !found {
		return nil, e
	}
	logs, ok := []chaindata.Log(nil), false
	if q.pre != nil && q.pre.logs != nil {
		_, prefetchedTx := q.pre.txs[tx.Hash]
		logs, ok = q.pre.logs[tx.Hash], prefetchedTx
	}
	if !ok {
		var err error
		if logs, err = q.ownLogs(tx); err != nil {
			return nil, q.storeFailed(err)
		}
	}
	return q.encoded(rpcReceipt(tx, logs))
}

// blockReceipts answers eth_getBlockReceipts: every receipt of a block,
// from two reads (its transactions, its logs).
func (q *rpcReq) blockReceipts(p rpcParams) (json.RawMessage, *rpcError) {
	if e := p.want(1, 1); e != nil {
		return nil, e
	}
	ref, e := p.blockRefParam(0, true)
	if e != nil {
		return nil, e
	}
	b, found, e := q.block(ref)
	if e != nil || !found {
		return nil, e
	}
	txs, err := q.ownTransactions(b)
	if err != nil {
		return nil, q.storeFailed(err)
	}
	logs, err := q.s.store.Chain.Logs(q.r.Context(), q.id, storage.LogQuery{From: b.Number, To: b.Number, Limit: int(b.LogCount) + 1})
	if err != nil {
		return nil, q.storeFailed(err)
	}
	byTx := map[string][]chaindata.Log{}
	for _, l := range logs {
		if l.BlockHash == b.Hash {
			byTx[l.TxHash] = append(byTx[l.TxHash], l)
		}
	}
	out := make([]json.RawMessage, 0, len(txs))
	for _, tx := range txs {
		r, e := q.encoded(rpcReceipt(tx, byTx[tx.Hash]))
		if e != nil {
			return nil, e
		}
		out = append(out, r)
	}
	return result(out), nil
}
