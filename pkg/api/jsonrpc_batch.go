package api

import (
	"encoding/json"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/storage"
)

// A batch's calls are answered side by side, api.rpc_batch_concurrency at
// a time, each with its own rpcReq sharing the request's view and reads
// ahead: an explorer's page is one batch mixing index reads with node
// calls (Otterscan's address page: 36 calls, 19 of them ots_hasCode, each
// a node round trip), and one after another it cost the sum of them. The
// answer keeps the calls' order. The bound is per request: a batch takes
// at most that many of the database's and the node's connections,
// whatever its size.
//
// The batch shares the request's deadline (api.request_timeout). A call
// not started when it passes is answered with an error that says so,
// rather than started to fail on a context already done.

// serveBatch answers the calls, in their order; notifications get no
// reply.
func (q *rpcReq) serveBatch(calls []json.RawMessage) []rpcReply {
	replies := make([]rpcReply, len(calls))
	answered := make([]bool, len(calls))
	ctx := q.r.Context()
	slots := make(chan struct{}, q.s.cfg.RPCBatchConcurrency)
	var wg sync.WaitGroup
	for i, raw := range calls {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			replies[i], answered[i] = q.notStarted(raw)
			continue
		}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			call := &rpcReq{chainReq: q.chainReq, shared: q.shared}
			replies[i], answered[i] = call.serve(raw)
		}()
	}
	wg.Wait()
	out := make([]rpcReply, 0, len(calls))
	for i, r := range replies {
		if answered[i] {
			out = append(out, r)
		}
	}
	return out
}

// notStarted answers a call of a batch whose request ran out of time
// before the call's turn: an error naming the deadline, or no reply for a
// notification (which is then not carried out).
func (q *rpcReq) notStarted(raw json.RawMessage) (rpcReply, bool) {
	var m rpcCallMsg
	if json.Unmarshal(raw, &m) != nil || !validID(m.ID) {
		return q.serve(raw) // malformed: its own error, no work
	}
	q.s.m.rpcCalls.WithLabelValues(methodLabel(q.s, m.Method), outcomeTimeout).Inc()
	return rpcFailure(m.ID, rpcErrorf(rpcServerError,
		"not answered: the request's time (api.request_timeout, %s) ran out before this call of the batch was started; send it again, or fewer calls at once",
		q.s.cfg.RequestTimeout)), m.ID != nil
}

// A batch of calls by transaction hash (a page of receipts, of
// transactions) is read in three queries, not three per call: before the
// calls run, prefetch reads every hash's look-up, then the transactions
// and their logs side by side (both need only the look-up's positions);
// the calls then find them in the request (tx, ownLogs). A batch of
// receipts alone reads the transactions without their own JSON (raw, most
// of the table's bytes; a receipt is built from receipt_raw). What the
// batch reads is the request's view, as for single calls.

// prefetched is what prefetch read: each hash's served transaction (absent:
// not served, null) and each transaction's logs.
type prefetched struct {
	hashes map[string]bool // asked; a hash asked and not in txs is not served
	txs    map[string]chaindata.Transaction
	logs   map[string][]chaindata.Log // nil when no call needs logs
	// receiptsOnly: txs hold only what a receipt uses (ReceiptTxsAt), so
	// only receipts are answered from them; any other call by one of the
	// hashes (a trace, say) reads its transaction itself.
	receiptsOnly bool
}

// byHashMethods are the methods whose first argument is a transaction
// hash, and whether they need the logs (a receipt) or the transaction's
// own JSON (the transaction).
var byHashMethods = map[string]struct{ logs, raw bool }{
	"eth_getTransactionByHash":  {raw: true},
	"eth_getTransactionReceipt": {logs: true},
}

// prefetch reads ahead the transactions (and logs) a batch asks by hash,
// when it asks for more than one. A failure leaves the calls to read on
// their own (and fail there, each with its error).
func (q *rpcReq) prefetch(calls []json.RawMessage) {
	var hashes []string
	logs, raw := false, false
	seen := map[string]bool{}
	for _, call := range calls {
		var m struct {
			Method string            `json:"method"`
			Params []json.RawMessage `json:"params"`
		}
		if json.Unmarshal(call, &m) != nil || len(m.Params) != 1 {
			continue
		}
		needs, ok := byHashMethods[m.Method]
		if !ok {
			continue
		}
		var h string
		if json.Unmarshal(m.Params[0], &h) != nil {
			continue
		}
		if h, ok = hexOfLen(h, 32); !ok {
			continue
		}
		logs, raw = logs || needs.logs, raw || needs.raw // of every call, a hash asked twice too
		if !seen[h] {
			seen[h] = true
			hashes = append(hashes, h)
		}
	}
	if len(hashes) < 2 {
		return
	}
	v, e := q.view()
	if e != nil || !v.HasWatermark {
		return
	}
	ctx := q.r.Context()
	byHash, err := q.s.store.RPC.TxPositionsByHashes(ctx, q.id, hashes, v.Lowest(), v.Watermark)
	if err != nil {
		return
	}
	var ps []storage.Position
	for _, list := range byHash {
		ps = append(ps, list...)
	}
	var rows []chaindata.Transaction
	var ls []chaindata.Log
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		if raw {
			rows, err = q.s.store.Chain.TransactionsAt(gctx, q.id, ps)
		} else {
			rows, err = q.s.store.RPC.ReceiptTxsAt(gctx, q.id, ps)
		}
		return err
	})
	if logs && len(ps) > 0 {
		g.Go(func() (err error) {
			ls, err = q.s.store.RPC.LogsOfTxs(gctx, q.id, ps)
			return err
		})
	}
	if g.Wait() != nil {
		return
	}
	p := &prefetched{txs: map[string]chaindata.Transaction{}, hashes: seen, receiptsOnly: !raw}
	for _, tx := range rows { // ascending by height: the first is servedTx's
		if _, dup := p.txs[tx.Hash]; seen[tx.Hash] && !dup {
			p.txs[tx.Hash] = tx
		}
	}
	if logs {
		p.logs = ownLogsOf(p.txs, ls)
	}
	q.pre = p
}

// ownLogsOf sorts logs by transaction hash, keeping those of each
// transaction's own block (a stale look-up's height may hold another
// block's logs).
func ownLogsOf(txs map[string]chaindata.Transaction, ls []chaindata.Log) map[string][]chaindata.Log {
	out := map[string][]chaindata.Log{}
	for _, l := range ls {
		if tx, ok := txs[l.TxHash]; ok && tx.BlockHash == l.BlockHash && tx.BlockNumber == l.BlockNumber {
			out[l.TxHash] = append(out[l.TxHash], l)
		}
	}
	return out
}

// logsOfTxs reads the logs of transactions in one read, by hash (those of
// the transactions' own blocks).
func (q *rpcReq) logsOfTxs(txs []chaindata.Transaction) (map[string][]chaindata.Log, *rpcError) {
	ps := make([]storage.Position, len(txs))
	byHash := make(map[string]chaindata.Transaction, len(txs))
	for i, tx := range txs {
		ps[i] = storage.Position{Block: tx.BlockNumber, Index: tx.Index}
		byHash[tx.Hash] = tx
	}
	ls, err := q.s.store.RPC.LogsOfTxs(q.r.Context(), q.id, ps)
	if err != nil {
		return nil, q.storeFailed(err)
	}
	return ownLogsOf(byHash, ls), nil
}
