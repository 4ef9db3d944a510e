package api

import (
	"encoding/json"
	"net/http"
)

// The proxy module's block-position methods (and the tag parameter of
// every block method):
// eth_getBlockTransactionCountByNumber and
// eth_getTransactionByBlockNumberAndIndex, answered as a node answers them
// (null for a block or index it does not have).

// servedBlockTag resolves the tag parameter (hex, latest, earliest) to a
// served height; ok is false when the answer is sent (an error, or null).
func (q *esReq) servedBlockTag() (h uint64, ok bool) {
	v, e := q.viewOf()
	if e != nil {
		q.rpcFailed(e)
		return 0, false
	}
	switch tag := q.get("tag"); tag {
	case "latest":
		if !v.HasWatermark {
			q.rpcResult(nil)
			return 0, false
		}
		h = v.Watermark
	case "earliest":
		h = v.Lowest()
	case "":
		q.rpcFail(http.StatusOK, rpcInvalidParams, "missing tag: a block number in hex (0x10d4f), latest or earliest")
		return 0, false
	default:
		n, good := quantityParam(tag)
		if !good {
			q.rpcFail(http.StatusOK, rpcInvalidParams, "invalid argument 0: tag %q is not a hex block number (0x10d4f), latest or earliest", clip(tag))
			return 0, false
		}
		h = n
	}
	if v.IsPruned(h) {
		q.rpcFail(http.StatusOK, rpcServerError, "block %d was pruned: this index keeps heights above %d only", h, v.Pruned)
		return 0, false
	}
	if !v.Serves(h) {
		q.rpcResult(nil) // as a node answers for a block it does not have
		return 0, false
	}
	return h, true
}

func (q *esReq) blockTxCount() {
	h, ok := q.servedBlockTag()
	if !ok {
		return
	}
	bs, err := q.s.store.Chain.BlocksAt(q.r.Context(), q.id, []uint64{h})
	if err != nil {
		q.rpcFailed(fromStore(err))
		return
	}
	if len(bs) == 0 {
		q.rpcResult(nil)
		return
	}
	q.rpcResult(json.RawMessage(`"` + quantity(uint64(bs[0].TxCount)) + `"`))
}

func (q *esReq) txByBlockAndIndex() {
	idx, good := quantityParam(q.get("index"))
	if !good || idx > 1<<31 {
		q.rpcFail(http.StatusOK, rpcInvalidParams, "invalid argument 1: index %q is not a hex transaction index (0x0)", clip(q.get("index")))
		return
	}
	h, ok := q.servedBlockTag()
	if !ok {
		return
	}
	txs, err := q.s.store.Chain.BlockTransactions(q.r.Context(), q.id, h, uint32(idx), 1)
	if err != nil {
		q.rpcFailed(fromStore(err))
		return
	}
	if len(txs) == 0 || txs[0].Index != uint32(idx) {
		q.rpcResult(nil)
		return
	}
	out, err := rpcTx(txs[0])
	if err != nil {
		q.rpcFailed(fromStore(err))
		return
	}
	q.rpcResult(out)
}
