package api

import (
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"strings"

	"github.com/ethereum/go-ethereum/common/hexutil"

	"github.com/tideline-dev/tideline/pkg/chaindata"
)

// Otterscan's ots_ namespace (API level 8), what an unmodified Otterscan
// asks of its node, answered from the index: the block pages and the
// transaction views from blocks, transactions and receipts; the trace
// views (internal operations, the call tree, a failed transaction's
// revert output) from the stored call traces, so a chain indexed without
// traces answers those with an error; ots_hasCode from the node. The
// methods that need look-ups by address (the address history searches,
// a sender's nonce, a contract's creator) are not served yet.

// otsAPILevel is the level Otterscan requires.
const otsAPILevel = 8

func (q *rpcReq) otsAPILevel(p rpcParams) (json.RawMessage, *rpcError) {
	if e := p.want(0, 0); e != nil {
		return nil, e
	}
	return result(otsAPILevel), nil
}

// erigonHeader answers erigon_getHeaderByNumber, which Otterscan asks for
// the newest block: the block with transaction hashes.
func (q *rpcReq) erigonHeader(p rpcParams) (json.RawMessage, *rpcError) {
	if e := p.want(1, 1); e != nil {
		return nil, e
	}
	ref, e := p.blockRefParam(0, false)
	if e != nil {
		return nil, e
	}
	return q.blockAnswer(ref, rpcParams{p[0], json.RawMessage("false")})
}

// otsHasCode asks the node for the code (state is the node's).
func (q *rpcReq) otsHasCode(p rpcParams) (json.RawMessage, *rpcError) {
	if e := p.want(2, 2); e != nil {
		return nil, e
	}
	if q.s.forward == nil {
		return nil, rpcErrorf(rpcServerError, "ots_hasCode needs the node, which this API does not reach")
	}
	// Otterscan sends the block as a JSON number (Erigon's ots_hasCode and
	// anvil's take one); eth_getCode takes a quantity or a tag, and a
	// node refuses the number, so it goes as its hex quantity.
	block := p[1]
	var n uint64
	if json.Unmarshal(block, &n) == nil {
		block = json.RawMessage(strconv.Quote(hexutil.EncodeUint64(n)))
	}
	raw, e := q.forward("eth_getCode", rpcParams{p[0], block})
	if e != nil {
		return nil, e
	}
	var code string
	if json.Unmarshal(raw, &code) != nil {
		return nil, rpcErrorf(rpcServerError, "the node's code is not a hex string")
	}
	return result(len(code) > 2), nil
}

// frames reads the served transaction's call frames: from the top-level
// call, depth first; the error says why there are none.
func (q *rpcReq) frames(p rpcParams) (chaindata.Transaction, []chaindata.Trace, *rpcError) {
	tx, found, e := q.tx(p)
	switch {
	case e != nil:
		return tx, nil, e
	case !found:
		return tx, nil, rpcErrorf(rpcServerError, "transaction %s is not indexed", string(p[0]))
	}
	fs, ae := q.txFrames(tx)
	if ae != nil {
		return tx, nil, q.failed(ae)
	}
	return tx, fs, nil
}

// Internal operations' types, as Otterscan numbers them.
const (
	opTransfer     = 0
	opSelfDestruct = 1
	opCreate       = 2
	opCreate2      = 3
)

type otsOperation struct {
	Type  int    `json:"type"`
	From  string `json:"from"`
	To    string `json:"to"`
	Value string `json:"value"`
}

// otsInternalOperations answers ots_getInternalOperations: the frames
// that create or destroy a contract and the CALLs that move value, the
// top-level call included (as anvil lists them).
func (q *rpcReq) otsInternalOperations(p rpcParams) (json.RawMessage, *rpcError) {
	if e := p.want(1, 1); e != nil {
		return nil, e
	}
	_, fs, e := q.frames(p)
	if e != nil {
		return nil, e
	}
	ops := []otsOperation{}
	for _, f := range fs {
		op := -1
		switch f.Type {
		case chaindata.TraceCall:
			if f.Value != "0" && f.Value != "" {
				op = opTransfer
			}
		case chaindata.TraceCreate:
			op = opCreate
		case chaindata.TraceCreate2:
			op = opCreate2
		case chaindata.TraceSelfDestruct:
			op = opSelfDestruct
		}
		if op < 0 {
			continue
		}
		v, err := bigQuantity(orZero(f.Value))
		if _, e := q.encoded(nil, err); e != nil {
			return nil, e
		}
		ops = append(ops, otsOperation{Type: op, From: f.From, To: f.To, Value: v})
	}
	return result(ops), nil
}

func orZero(dec string) string {
	if dec == "" {
		return "0"
	}
	return dec
}

type otsTraceEntry struct {
	Type   string  `json:"type"`
	Depth  int     `json:"depth"`
	From   string  `json:"from"`
	To     string  `json:"to"`
	Value  *string `json:"value"`
	Input  string  `json:"input"`
	Output string  `json:"output"`
}

// otsTraceTransaction answers ots_traceTransaction: every frame of the
// call tree, depth first, with its depth.
func (q *rpcReq) otsTraceTransaction(p rpcParams) (json.RawMessage, *rpcError) {
	if e := p.want(1, 1); e != nil {
		return nil, e
	}
	_, fs, e := q.frames(p)
	if e != nil {
		return nil, e
	}
	out := make([]otsTraceEntry, 0, len(fs))
	for _, f := range fs {
		v, err := bigQuantity(orZero(f.Value))
		if _, e := q.encoded(nil, err); e != nil {
			return nil, e
		}
		out = append(out, otsTraceEntry{Type: strings.ToUpper(string(f.Type)), Depth: f.Depth(), From: f.From, To: f.To,
			Value: &v, Input: f.Input, Output: f.Output})
	}
	return result(out), nil
}

// otsTransactionError answers ots_getTransactionError: what a failed
// transaction's top-level call returned (its revert data), "0x" for one
// that succeeded.
func (q *rpcReq) otsTransactionError(p rpcParams) (json.RawMessage, *rpcError) {
	if e := p.want(1, 1); e != nil {
		return nil, e
	}
	tx, found, e := q.tx(p)
	switch {
	case e != nil:
		return nil, e
	case !found:
		return nil, rpcErrorf(rpcServerError, "transaction %s is not indexed", string(p[0]))
	case tx.Status != 0:
		return result("0x"), nil
	}
	fs, ae := q.txFrames(tx)
	if ae != nil {
		return nil, q.failed(ae)
	}
	return result(orEmptyHex(fs[0].Output)), nil
}

func orEmptyHex(s string) string {
	if s == "" {
		return "0x"
	}
	return s
}

// otsBlockDetails answers ots_getBlockDetails(ByHash): the block without
// its transactions but with their count, the fees they paid, and the
// issuance, which tideline does not compute (zero: no block reward since
// the merge).
func (q *rpcReq) otsBlockDetails(p rpcParams, byHash bool) (json.RawMessage, *rpcError) {
	if e := p.want(1, 1); e != nil {
		return nil, e
	}
	b, found, e := q.blockArg(p, byHash)
	if e != nil {
		return nil, e
	}
	if !found {
		return nil, rpcErrorf(rpcServerError, "block not found")
	}
	txs, err := q.ownTransactions(b)
	if err != nil {
		return nil, q.storeFailed(err)
	}
	raw, e := q.encoded(rpcBlock(b, nil, false))
	if e != nil {
		return nil, e
	}
	o, _ := objectOf(raw)
	delete(o, "transactions")
	o.set("transactionCount", len(txs))
	fees := new(big.Int)
	for _, tx := range txs {
		price, ok := new(big.Int).SetString(orZero(tx.EffectiveGasPrice), 10)
		if !ok {
			return q.encoded(nil, fmt.Errorf("stored effective gas price %q is not a decimal number", tx.EffectiveGasPrice))
		}
		fees.Add(fees, price.Mul(price, new(big.Int).SetUint64(tx.GasUsed)))
	}
	return result(map[string]any{
		"block":     o,
		"issuance":  map[string]string{"blockReward": "0x0", "uncleReward": "0x0", "issuance": "0x0"},
		"totalFees": "0x" + fees.Text(16),
	}), nil
}

func (q *rpcReq) otsBlockDetailsByNumber(p rpcParams) (json.RawMessage, *rpcError) {
	return q.otsBlockDetails(p, false)
}
func (q *rpcReq) otsBlockDetailsByHash(p rpcParams) (json.RawMessage, *rpcError) {
	return q.otsBlockDetails(p, true)
}

// otsBlockTransactions answers ots_getBlockTransactions(number, page,
// pageSize): a page of the block's transactions (their input cut to the
// method selector) with their receipts and the block's timestamp, and the
// block with its transaction count.
func (q *rpcReq) otsBlockTransactions(p rpcParams) (json.RawMessage, *rpcError) {
	if e := p.want(3, 3); e != nil {
		return nil, e
	}
	var number, page, size uint64
	for i, dst := range []*uint64{&number, &page, &size} {
		if json.Unmarshal(p[i], dst) != nil {
			return nil, argError(i, "want a whole number")
		}
	}
	if size == 0 || size > 1000 {
		return nil, argError(2, "pageSize must be 1 to 1000")
	}
	b, found, e := q.block(blockRef{number: number})
	if e != nil {
		return nil, e
	}
	if !found {
		return nil, rpcErrorf(rpcServerError, "block not found")
	}
	txs, err := q.ownTransactions(b)
	if err != nil {
		return nil, q.storeFailed(err)
	}
	count := len(txs)
	from := min(uint64(count), page*size)
	txs = txs[from:min(uint64(count), from+size)]
	logsOf, e := q.logsOfTxs(txs)
	if e != nil {
		return nil, e
	}
	list := make([]json.RawMessage, 0, len(txs))
	receipts := make([]json.RawMessage, 0, len(txs))
	for _, tx := range txs {
		t, e := q.encoded(rpcTx(tx))
		if e != nil {
			return nil, e
		}
		to, _ := objectOf(t)
		// Otterscan shows a transaction's method, not its input: the
		// selector is all it is sent.
		var input string
		if json.Unmarshal(to["input"], &input) == nil && len(input) > 10 {
			to.set("input", input[:10])
		}
		list = append(list, result(to))
		r, e := q.encoded(rpcReceipt(tx, logsOf[tx.Hash]))
		if e != nil {
			return nil, e
		}
		ro, _ := objectOf(r)
		delete(ro, "blockTimestamp") // the page says it as timestamp
		ro.set("timestamp", quantity(b.Timestamp))
		receipts = append(receipts, result(ro))
	}
	raw, e := q.encoded(rpcBlock(b, nil, false))
	if e != nil {
		return nil, e
	}
	o, _ := objectOf(raw)
	o.setRaw("transactions", result(list))
	o.set("transactionCount", count)
	return result(map[string]any{"fullblock": o, "receipts": receipts}), nil
}
