package api

import (
	"encoding/json"
	"slices"

	"golang.org/x/sync/errgroup"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/storage"
)

// Otterscan's look-ups by address, from the address look-ups the index
// keeps: address_txs (a transaction's sender, recipient and created
// contract) and, with traces indexed, address_traces (every inner frame's
// caller, callee, created contract and beneficiary).
//
//   - ots_searchTransactionsBefore/After: an address's transactions, a
//     page of whole blocks at a time, newest first;
//   - ots_getTransactionBySenderAndNonce: a sender's transaction by nonce;
//   - ots_getContractCreator: the transaction that created a contract, and
//     who created it (the factory, for a contract created by a contract).
//
// Without traces only top-level parties are found: a contract created by
// a contract has no creator, and an address that only appears in inner
// calls has no history.

// otsMaxPage bounds a search page's size (the node's own page is whole
// blocks, so an answer may hold more).
const otsMaxPage = 100

// mention is one transaction an address appears in.
type mention struct {
	block uint64
	tx    uint32
}

// mentionsIn lists the transactions the address appears in at heights
// [lo, hi], in whole blocks, newest block first when desc, until at least
// want are listed: the block that reaches want is completed, and more
// tells whether a block with mentions is left beyond it.
func (q *rpcReq) mentionsIn(addr string, lo, hi uint64, desc bool, want int, traced bool) (blocks [][]mention, more bool, e *rpcError) {
	count := 0
	for lo <= hi {
		// Each look-up is read a page at a time; a page that comes back
		// full is known to be whole only for the blocks before its last.
		ctx := q.r.Context()
		const page = 256
		ps, err := q.s.store.Chain.AddressTxPositions(ctx, q.id, storage.AddressTxQuery{Address: addr, From: lo, To: hi, Desc: desc, Limit: page})
		if err != nil {
			return nil, false, q.storeFailed(err)
		}
		byBlock := map[uint64]map[uint32]bool{}
		add := func(b uint64, tx uint32) {
			if byBlock[b] == nil {
				byBlock[b] = map[uint32]bool{}
			}
			byBlock[b][tx] = true
		}
		for _, p := range ps {
			add(p.Block, p.Index)
		}
		cut, truncated := uint64(0), false
		if len(ps) == page {
			cut, truncated = ps[len(ps)-1].Block, true
		}
		if traced {
			ts, err := q.s.store.Traces.AddressTracePositions(ctx, q.id, storage.AddressTraceQuery{Address: addr, From: lo, To: hi,
				Desc: desc, All: true, Limit: page})
			if err != nil {
				return nil, false, q.storeFailed(err)
			}
			for _, p := range ts {
				add(p.Block, p.Tx)
			}
			if len(ts) == page {
				c := ts[len(ts)-1].Block
				if !truncated || (desc && c > cut) || (!desc && c < cut) {
					cut = c
				}
				truncated = true
			}
		}
		// Blocks strictly before the cut (in the walk's direction) are
		// whole; the cut block is read again in the next round.
		keys := make([]uint64, 0, len(byBlock))
		for b := range byBlock {
			if !truncated || (desc && b > cut) || (!desc && b < cut) {
				keys = append(keys, b)
			}
		}
		slices.Sort(keys)
		if desc {
			slices.Reverse(keys)
		}
		for _, b := range keys {
			if count >= want {
				return blocks, true, nil
			}
			var ms []mention
			for tx := range byBlock[b] {
				ms = append(ms, mention{b, tx})
			}
			slices.SortFunc(ms, func(x, y mention) int { return int(y.tx) - int(x.tx) }) // newest first
			blocks = append(blocks, ms)
			count += len(ms)
		}
		switch {
		case !truncated:
			return blocks, false, nil
		case len(keys) == 0:
			// One block holds more mentions than a page: read it whole.
			ps, err := q.s.store.Chain.AddressTxPositions(ctx, q.id, storage.AddressTxQuery{Address: addr, From: cut, To: cut, Limit: 1 << 20})
			if err != nil {
				return nil, false, q.storeFailed(err)
			}
			ms := map[uint32]bool{}
			for _, p := range ps {
				ms[p.Index] = true
			}
			if traced {
				ts, err := q.s.store.Traces.AddressTracePositions(ctx, q.id, storage.AddressTraceQuery{Address: addr, From: cut, To: cut,
					All: true, Limit: 1 << 20})
				if err != nil {
					return nil, false, q.storeFailed(err)
				}
				for _, p := range ts {
					ms[p.Tx] = true
				}
			}
			var list []mention
			for tx := range ms {
				list = append(list, mention{cut, tx})
			}
			slices.SortFunc(list, func(x, y mention) int { return int(y.tx) - int(x.tx) })
			blocks = append(blocks, list)
			count += len(list)
			if desc {
				if cut == lo {
					return blocks, false, nil
				}
				hi = cut - 1
			} else {
				lo = cut + 1
			}
			if count >= want {
				// Whether a block is left beyond: ask the next round.
				rest, _, e := q.mentionsIn(addr, lo, hi, desc, 1, traced)
				return blocks, len(rest) > 0, e
			}
		case desc:
			hi = cut
		default:
			lo = cut
		}
	}
	return blocks, false, nil
}

// otsSearch answers ots_searchTransactionsBefore (before) and After: the
// transactions of whole blocks, newest block first, each with its
// receipt and the block's timestamp.
func (q *rpcReq) otsSearch(p rpcParams, before bool) (json.RawMessage, *rpcError) {
	if e := p.want(3, 3); e != nil {
		return nil, e
	}
	addr, ok := hexOfLen(string(trimQuotes(p[0])), 20)
	if !ok {
		return nil, argError(0, "want a 20-byte address")
	}
	var number uint64
	var size int
	if json.Unmarshal(p[1], &number) != nil {
		return nil, argError(1, "want a block number")
	}
	if json.Unmarshal(p[2], &size) != nil || size < 1 || size > otsMaxPage {
		return nil, argError(2, "pageSize must be 1 to %d", otsMaxPage)
	}
	v, e := q.view()
	if e != nil {
		return nil, e
	}
	// The page flags are anvil's (the reference this is tested against):
	// the walk goes block by block from the page's start, adds whole
	// blocks and stops at the first block it meets with the page already
	// full; firstPage (newest end) and lastPage (oldest end) say whether
	// the walk reached that end of the chain. A walk stopped early says
	// there may be more, even when no older (newer) transaction is left.
	best := v.Watermark
	first := max(v.Lowest(), 1) // block 0 holds no transaction
	lo, hi := first, best
	var firstPage, lastPage bool
	if before {
		if number != 0 {
			hi = number - 1
		}
		firstPage = hi >= best
		hi = min(hi, best)
	} else {
		if number != 0 {
			lo = number + 1
		}
		firstPage = lo >= best
		lastPage = lo == first
	}
	var blocks [][]mention
	if v.HasWatermark && lo <= hi {
		blocks, _, e = q.mentionsIn(addr, lo, hi, before, size, q.ch.Traces.Enabled())
		if e != nil {
			return nil, e
		}
		count := 0
		for _, ms := range blocks {
			count += len(ms)
		}
		// The walk reached its end unless the page filled before it.
		reachedEnd := count < size || (before && blocks[len(blocks)-1][0].block == lo) ||
			(!before && blocks[len(blocks)-1][0].block == hi)
		if before {
			lastPage = reachedEnd
		} else {
			firstPage = firstPage || reachedEnd
		}
	}
	var ps []storage.Position
	if !before {
		// Oldest block first was the walk; the page is newest block first,
		// each block's transactions in order.
		slices.Reverse(blocks)
		for _, ms := range blocks {
			slices.Reverse(ms)
		}
	}
	for _, ms := range blocks {
		for _, m := range ms {
			ps = append(ps, storage.Position{Block: m.block, Index: m.tx})
		}
	}
	txs, receipts, e := q.txsWithReceipts(ps)
	if e != nil {
		return nil, e
	}
	return result(map[string]any{"txs": txs, "receipts": receipts, "firstPage": firstPage, "lastPage": lastPage}), nil
}

func (q *rpcReq) otsSearchBefore(p rpcParams) (json.RawMessage, *rpcError) {
	return q.otsSearch(p, true)
}
func (q *rpcReq) otsSearchAfter(p rpcParams) (json.RawMessage, *rpcError) {
	return q.otsSearch(p, false)
}

// txsWithReceipts reads the transactions at ps, in that order, with their
// receipts as Otterscan takes them (the block's timestamp added).
func (q *rpcReq) txsWithReceipts(ps []storage.Position) ([]json.RawMessage, []json.RawMessage, *rpcError) {
	txs, receipts := []json.RawMessage{}, []json.RawMessage{}
	if len(ps) == 0 {
		return txs, receipts, nil
	}
	// The three reads need only the positions: sent together, as a
	// batch's (each is a scattered read of its own table).
	heights := make([]uint64, len(ps))
	for i, p := range ps {
		heights[i] = p.Block
	}
	var (
		rows  []chaindata.Transaction
		times map[uint64]storage.BlockTime
		ls    []chaindata.Log
	)
	g, gctx := errgroup.WithContext(q.r.Context())
	g.Go(func() (err error) {
		rows, err = q.s.store.Chain.TransactionsAt(gctx, q.id, ps)
		return err
	})
	g.Go(func() (err error) {
		times, err = q.s.store.Chain.BlockTimes(gctx, q.id, heights)
		return err
	})
	g.Go(func() (err error) {
		ls, err = q.s.store.RPC.LogsOfTxs(gctx, q.id, ps)
		return err
	})
	if err := g.Wait(); err != nil {
		return nil, nil, q.storeFailed(err)
	}
	at := map[storage.Position]chaindata.Transaction{}
	byHash := make(map[string]chaindata.Transaction, len(rows))
	for _, tx := range rows {
		at[storage.Position{Block: tx.BlockNumber, Index: tx.Index}] = tx
		byHash[tx.Hash] = tx
	}
	logsOf := ownLogsOf(byHash, ls)
	for _, p := range ps {
		tx, ok := at[p]
		if !ok || times[p.Block].Hash != tx.BlockHash {
			return nil, nil, q.failed(unavailable("the transactions of height %d are being rewritten (a reorganisation); retry", p.Block))
		}
		t, e := q.encoded(rpcTx(tx))
		if e != nil {
			return nil, nil, e
		}
		r, e := q.encoded(rpcReceipt(tx, logsOf[tx.Hash]))
		if e != nil {
			return nil, nil, e
		}
		ro, _ := objectOf(r)
		delete(ro, "blockTimestamp")
		ro.set("timestamp", quantity(times[p.Block].Timestamp))
		txs, receipts = append(txs, t), append(receipts, result(ro))
	}
	return txs, receipts, nil
}

func trimQuotes(raw json.RawMessage) []byte {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return nil
	}
	return []byte(s)
}

// otsTxBySenderAndNonce answers ots_getTransactionBySenderAndNonce: the
// hash, or null.
func (q *rpcReq) otsTxBySenderAndNonce(p rpcParams) (json.RawMessage, *rpcError) {
	if e := p.want(2, 2); e != nil {
		return nil, e
	}
	addr, ok := hexOfLen(string(trimQuotes(p[0])), 20)
	if !ok {
		return nil, argError(0, "want a 20-byte address")
	}
	nonce, e := p.quantity(1)
	if e != nil {
		return nil, argError(1, "want a nonce (a number or hex)")
	}
	v, e := q.view()
	if e != nil || !v.HasWatermark {
		return nil, e
	}
	txs, err := q.s.store.RPC.SenderNonceTx(q.r.Context(), q.id, addr, nonce, v.Lowest(), v.Watermark)
	if err != nil {
		return nil, q.storeFailed(err)
	}
	if len(txs) == 0 {
		return nil, nil
	}
	return result(txs[len(txs)-1].Hash), nil
}

// otsContractCreator answers ots_getContractCreator: {hash, creator} of
// the first creation of the address (the transaction's sender for a
// top-level creation, the factory for an inner one), or null.
func (q *rpcReq) otsContractCreator(p rpcParams) (json.RawMessage, *rpcError) {
	if e := p.want(1, 1); e != nil {
		return nil, e
	}
	addr, ok := hexOfLen(string(trimQuotes(p[0])), 20)
	if !ok {
		return nil, argError(0, "want a 20-byte address")
	}
	c, found, e := q.creation(addr)
	if e != nil || !found {
		return nil, e
	}
	return result(map[string]string{"hash": c.txHash, "creator": c.creator}), nil
}

// creationOf is where a contract was created.
type creationOf struct {
	txHash, creator, sender, factory, initCode string
	block                                      uint64
}

// creation finds the first creation of addr among its first appearances.
func (q *rpcReq) creation(addr string) (creationOf, bool, *rpcError) {
	v, e := q.view()
	if e != nil || !v.HasWatermark {
		return creationOf{}, false, e
	}
	c, found, ae := q.findCreation(addr, v)
	if ae != nil {
		return c, false, q.failed(ae)
	}
	return c, found, nil
}

// findCreation finds the first creation of addr at the served heights: a
// transaction that created it (among the address's first appearances:
// value may reach an address before its contract is deployed), else, with
// traces indexed, an inner frame that did and was not undone.
func (c chainReq) findCreation(addr string, v view) (creationOf, bool, *apiError) {
	ctx := c.r.Context()
	const look = 100
	ps, err := c.s.store.Chain.AddressTxPositions(ctx, c.id, storage.AddressTxQuery{Address: addr, From: v.Lowest(), To: v.Watermark, Limit: look})
	if err != nil {
		return creationOf{}, false, fromStore(err)
	}
	txs, err := c.s.store.Chain.TransactionsAt(ctx, c.id, ps)
	if err != nil {
		return creationOf{}, false, fromStore(err)
	}
	for _, tx := range txs {
		if tx.ContractAddress == addr {
			input := ""
			if o, err := objectOf(tx.Raw); err == nil {
				_ = json.Unmarshal(o["input"], &input)
			}
			return creationOf{txHash: tx.Hash, creator: tx.From, sender: tx.From, initCode: input, block: tx.BlockNumber}, true, nil
		}
	}
	if !c.ch.Traces.Enabled() {
		return creationOf{}, false, nil
	}
	tps, err := c.s.store.Traces.AddressTracePositions(ctx, c.id, storage.AddressTraceQuery{Address: addr, From: v.Lowest(), To: v.Watermark,
		All: true, Limit: look})
	if err != nil {
		return creationOf{}, false, fromStore(err)
	}
	fs, err := c.s.store.Traces.TracesAt(ctx, c.id, tps)
	if err != nil {
		return creationOf{}, false, fromStore(err)
	}
	for _, f := range fs {
		if f.Type.IsCreation() && f.To == addr && !f.Reverted {
			tx, ae := c.servedTx(f.TxHash)
			if ae != nil {
				return creationOf{}, false, ae
			}
			return creationOf{txHash: f.TxHash, creator: f.From, sender: tx.From, factory: f.From, initCode: f.Input, block: f.BlockNumber}, true, nil
		}
	}
	return creationOf{}, false, nil
}
