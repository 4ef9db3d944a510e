package api

import (
	"fmt"
	"net/http"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/storage"
	"github.com/tideline-dev/tideline/pkg/stream"
)

// Blocks: one by height or by hash, a listing by heights or times, and a
// block's transactions.

func (s *Server) blockByHeight(r *http.Request) (any, *apiError) {
	q, e := s.request(r, pathHeight)
	if e != nil {
		return nil, e
	}
	b, e := q.servedBlock(q.height)
	if e != nil {
		return nil, e
	}
	return blockOf(b), nil
}

// servedBlock reads the canonical block of a served height.
func (c chainReq) servedBlock(h uint64) (chaindata.Block, *apiError) {
	v, e := c.viewOf()
	if e != nil {
		return chaindata.Block{}, e
	}
	if e := checkHeight(v, "height", h); e != nil {
		return chaindata.Block{}, e
	}
	bs, err := c.s.store.Chain.BlocksAt(c.r.Context(), c.id, []uint64{h})
	if err != nil {
		return chaindata.Block{}, fromStore(err)
	}
	if len(bs) == 0 {
		return chaindata.Block{}, c.missing("height", h, fmt.Sprintf("no canonical block at height %d", h))
	}
	return bs[0], nil
}

func (s *Server) blockByHash(r *http.Request) (any, *apiError) {
	q, e := s.request(r, pathHash)
	if e != nil {
		return nil, e
	}
	v, e := q.viewOf()
	if e != nil {
		return nil, e
	}
	if !v.HasWatermark {
		return nil, notFound("no block %s: nothing is indexed yet", q.hash)
	}
	hs, err := s.store.Chain.BlockHeightsByHash(r.Context(), q.id, q.hash, v.Lowest(), v.Watermark)
	if err != nil {
		return nil, fromStore(err)
	}
	bs, err := s.store.Chain.BlocksAt(r.Context(), q.id, hs)
	if err != nil {
		return nil, fromStore(err)
	}
	// The look-up says where; the block row itself must still be that
	// block (a reorganisation may have replaced it since).
	for _, b := range bs {
		if b.Hash == q.hash {
			return blockOf(b), nil
		}
	}
	return nil, notFound("no canonical block %s at or below the watermark %d", q.hash, v.Watermark)
}

func (s *Server) listBlocks(r *http.Request) (any, *apiError) {
	q, e := s.request(r, pathNone, "from", "to", "from_time", "to_time", "limit", "cursor")
	if e != nil {
		return nil, e
	}
	p := q.p
	byHeight, byTime := p.has("from") || p.has("to"), p.has("from_time") || p.has("to_time")
	switch {
	case byHeight && byTime:
		return nil, badParam("from_time", "give a height range (from, to) or a time range (from_time, to_time), not both")
	case !byHeight && !byTime:
		return nil, badParam("from", "required (or from_time): the first height of the listing")
	case byHeight && !p.has("from"):
		return nil, badParam("from", "required with to: the first height of the listing")
	case byTime && !p.has("from_time"):
		return nil, badParam("from_time", "required with to_time: the first time of the listing")
	}
	limit, after, e := q.listing(cursorBlocks)
	if e != nil {
		return nil, e
	}
	var from, to uint64
	var fromTime, toTime uint64
	hasTo := false
	if byHeight {
		if from, e = parseHeight("from", p.get("from")); e != nil {
			return nil, e
		}
		if to, hasTo, e = p.optHeight("to"); e != nil {
			return nil, e
		}
		if hasTo && from > to {
			return nil, badParam("from", "%d is above to (%d)", from, to)
		}
	} else {
		if fromTime, e = parseTime("from_time", p.get("from_time")); e != nil {
			return nil, e
		}
		toTime = ^uint64(0)
		if p.has("to_time") {
			if toTime, e = parseTime("to_time", p.get("to_time")); e != nil {
				return nil, e
			}
			if fromTime > toTime {
				return nil, badParam("from_time", "%d is after to_time (%d)", fromTime, toTime)
			}
		}
	}
	v, e := q.viewOf()
	if e != nil {
		return nil, e
	}
	out := page[Block]{Items: []Block{}, Watermark: v.Watermark}
	if byHeight && v.IsPruned(from) {
		return nil, gone("from", from, v.Pruned)
	}
	if !v.HasWatermark {
		return out, nil
	}
	if byTime {
		// Times resolve to the heights they span among the served ones
		// (a block's time never goes back along the chain).
		lo, _, ok, err := s.store.Chain.BlockAtTime(r.Context(), q.id, fromTime, false, v.Lowest(), v.Watermark)
		if err != nil {
			return nil, fromStore(err)
		}
		if !ok {
			return out, nil
		}
		hi := v.Watermark
		if toTime != ^uint64(0) {
			h, _, ok, err := s.store.Chain.BlockAtTime(r.Context(), q.id, toTime, true, v.Lowest(), v.Watermark)
			if err != nil {
				return nil, fromStore(err)
			}
			if !ok || h < lo {
				return out, nil
			}
			hi = h
		}
		from, to, hasTo = lo, hi, true
	}
	from = max(from, v.Lowest())
	if !hasTo || to > v.Watermark {
		to = v.Watermark
	}
	if after != nil {
		if after.Block < from {
			return nil, badParam("cursor", "points below from; pass next_cursor of this listing unchanged")
		}
		from = after.Block
	}
	if from > to {
		return out, nil
	}
	last := min(to, from+uint64(limit)-1)
	bs, err := s.store.Chain.BlocksInRange(r.Context(), q.id, from, last)
	if err != nil {
		return nil, fromStore(err)
	}
	for _, b := range bs {
		if byTime && (b.Timestamp < fromTime || b.Timestamp > toTime) {
			continue
		}
		out.Items = append(out.Items, blockOf(b))
	}
	if last < to {
		c := encodeCursor(cursorBlocks, storage.Position{Block: last + 1})
		out.NextCursor = &c
	}
	return out, nil
}

func (s *Server) blockTxs(r *http.Request) (any, *apiError) {
	q, e := s.request(r, pathHeight, "limit", "cursor")
	if e != nil {
		return nil, e
	}
	h := q.height
	limit, after, e := q.listing(cursorBlockTxs)
	if e != nil {
		return nil, e
	}
	if after != nil && after.Block != h {
		return nil, badParam("cursor", "belongs to another block; pass next_cursor of this listing unchanged")
	}
	v, e := q.viewOf()
	if e != nil {
		return nil, e
	}
	if e := checkHeight(v, "height", h); e != nil {
		return nil, e
	}
	// The block's hash, to keep only its own transactions: a narrow read,
	// not the block's raw JSON.
	bts, err := s.store.Chain.BlockTimes(r.Context(), q.id, []uint64{h})
	if err != nil {
		return nil, fromStore(err)
	}
	b, ok := bts[h]
	if !ok {
		return nil, q.missing("height", h, fmt.Sprintf("no canonical block at height %d", h))
	}
	first := uint32(0)
	if after != nil {
		first = after.Index
	}
	txs, err := s.store.Chain.BlockTransactions(r.Context(), q.id, h, first, limit+1)
	if err != nil {
		return nil, fromStore(err)
	}
	out := page[stream.Transaction]{Items: []stream.Transaction{}, Watermark: v.Watermark}
	for i, tx := range txs {
		if tx.BlockHash != b.Hash {
			continue // a row of another block at this height: being rewritten
		}
		if i == limit {
			c := encodeCursor(cursorBlockTxs, storage.Position{Block: h, Index: tx.Index})
			out.NextCursor = &c
			break
		}
		out.Items = append(out.Items, stream.TransactionOf(tx))
	}
	return out, nil
}
