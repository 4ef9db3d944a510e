package api

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sort"

	"github.com/tideline-dev/tideline/pkg/chain"
	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/indexer/status"
	"github.com/tideline-dev/tideline/pkg/storage"
)

// The REST routes. Each checks its parameters first (400), then the
// chain's view: a height above the watermark is not served (404, "not
// indexed yet"), one at or below the pruned height is gone (410). Rows come
// from the main tables with FINAL and is_canonical = 1 (pkg/storage).

// defaultPage is a listing's page size when `limit` is not given.
const defaultPage = 25

// chainOf resolves the {id} path segment.
func (s *Server) chainOf(r *http.Request) (string, config.Chain, *apiError) {
	id := r.PathValue("id")
	ch, ok := s.chainMap()[id]
	if !ok {
		return "", config.Chain{}, notFound("chain %q is not served here; GET /v1/chains lists the chains", clip(id))
	}
	return id, ch, nil
}

// viewOf reads (or reuses) the chain's view.
func (s *Server) viewOf(r *http.Request, id string, ch config.Chain) (view, *apiError) {
	v, err := s.views.get(r.Context(), id, ch.StartHeight)
	if err != nil {
		return view{}, fromStore(err)
	}
	if v.HasWatermark {
		s.m.watermark.WithLabelValues(id).Set(float64(v.Watermark))
	}
	return v, nil
}

// checkHeight is the answer for a single height that is not served.
func checkHeight(v view, param string, h uint64) *apiError {
	switch {
	case v.IsPruned(h):
		return gone(param, h, v.Pruned)
	case h < v.Start:
		return notFound("height %d is below the chain's start height %d: it is not indexed", h, v.Start)
	case !v.HasWatermark:
		return notFound("height %d is not indexed yet: nothing is indexed from the start height %d on", h, v.Start)
	case h > v.Watermark:
		return notFound("height %d is not indexed yet (watermark %d)", h, v.Watermark)
	}
	return nil
}

// missing is the answer for a height in the view without a canonical
// row: gone if retention took it since the view was read, else not found.
func (s *Server) missing(r *http.Request, id string, ch config.Chain, param string, h uint64, what string) *apiError {
	v, err := s.views.fresh(r.Context(), id, ch.StartHeight)
	if err != nil {
		return fromStore(err)
	}
	if v.IsPruned(h) {
		return gone(param, h, v.Pruned)
	}
	return notFound("%s", what)
}

// ChainInfo is an entry of GET /v1/chains.
type ChainInfo struct {
	ID               string  `json:"id"`
	Type             string  `json:"type"`
	ExpectedChainID  *uint64 `json:"expected_chain_id"`
	StartHeight      uint64  `json:"start_height"`
	BlockTimeSeconds float64 `json:"block_time_seconds"`
}

func (s *Server) listChains(r *http.Request) (any, *apiError) {
	if _, e := queryParams(r.URL); e != nil {
		return nil, e
	}
	chains := s.chainMap()
	ids := make([]string, 0, len(chains))
	for id := range chains {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	out := struct {
		Chains []ChainInfo `json:"chains"`
	}{Chains: []ChainInfo{}}
	for _, id := range ids {
		ch := chains[id]
		info := ChainInfo{ID: id, Type: ch.Type, StartHeight: ch.StartHeight, BlockTimeSeconds: ch.BlockTime.Seconds()}
		if ch.ExpectedChainID != 0 {
			n := ch.ExpectedChainID
			info.ExpectedChainID = &n
		}
		out.Chains = append(out.Chains, info)
	}
	return out, nil
}

// Status is GET /v1/chains/{id}/status.
type Status struct {
	ChainID    string  `json:"chain_id"`
	Head       *uint64 `json:"head"`      // null when the node did not answer
	Watermark  *uint64 `json:"watermark"` // null when nothing is indexed
	LagBlocks  uint64  `json:"lag_blocks"`
	LagSeconds float64 `json:"lag_seconds"`
	// Scheduler is the running catch-up; null when none runs.
	Scheduler        *SchedulerStatus `json:"scheduler"`
	AggregatorHeight *uint64          `json:"aggregator_height"`
	PrunedHeight     *uint64          `json:"pruned_height"`
	// Errors says which parts could not be read (the rest is still there).
	Errors []string `json:"errors"`
}

// SchedulerStatus is a running catch-up's progress (its progress query).
type SchedulerStatus struct {
	Running bool `json:"running"`
	// Answered is false when the scheduler did not answer its progress
	// query in time: only Owned is known.
	Answered   bool          `json:"answered"`
	OwnedFrom  uint64        `json:"owned_from"`
	OwnedTo    uint64        `json:"owned_to"`
	Total      uint64        `json:"total"`
	Scheduled  uint64        `json:"scheduled"`
	Remaining  uint64        `json:"remaining"`
	InFlight   uint64        `json:"in_flight"`
	Rate       float64       `json:"rate"`
	ETASeconds float64       `json:"eta_seconds"`
	Buckets    []BucketState `json:"buckets"`
}

// BucketState is one priority bucket of a catch-up: Backlog = Total − Done.
type BucketState struct {
	Name    string `json:"name"`
	Total   uint64 `json:"total"`
	Done    uint64 `json:"done"`
	Backlog uint64 `json:"backlog"`
}

func (s *Server) chainStatus(r *http.Request) (any, *apiError) {
	id, ch, e := s.chainOf(r)
	if e != nil {
		return nil, e
	}
	if _, e := queryParams(r.URL); e != nil {
		return nil, e
	}
	// Whether the node answered is recorded here, not read back from the
	// error texts.
	src := s.status
	headKnown := false
	src.Head = func(ctx context.Context, id string) (uint64, error) {
		h, err := s.status.Head(ctx, id)
		headKnown = err == nil
		return h, err
	}
	c := status.Collect(r.Context(), src, []status.Want{{ChainID: id, StartHeight: ch.StartHeight, BlockTime: ch.BlockTime}})[0]
	out := Status{ChainID: id, LagBlocks: c.Lag, LagSeconds: c.LagSeconds, Errors: []string{}}
	for _, err := range c.Errors {
		out.Errors = append(out.Errors, s.redact(err))
	}
	if headKnown {
		h := c.Head
		out.Head = &h
	}
	if c.Indexed {
		wm := c.Watermark
		out.Watermark = &wm
	}
	if sc := c.Scheduler; sc != nil {
		ss := &SchedulerStatus{Running: true, Answered: sc.Answered, OwnedFrom: sc.Owned.From, OwnedTo: sc.Owned.To,
			Total: sc.Total, Scheduled: sc.Scheduled, Remaining: sc.Remaining, InFlight: sc.InFlight,
			Rate: sc.Rate, ETASeconds: sc.ETASeconds, Buckets: []BucketState{}}
		for _, b := range sc.Buckets {
			ss.Buckets = append(ss.Buckets, BucketState{Name: b.Name, Total: b.Total, Done: b.Done, Backlog: b.Total - min(b.Done, b.Total)})
		}
		out.Scheduler = ss
	}
	v, err := s.views.fresh(r.Context(), id, ch.StartHeight)
	if err != nil {
		out.Errors = append(out.Errors, "chain state: "+s.redact(fromStore(err).Message))
	} else {
		if v.HasAggr {
			a := v.Aggregator
			out.AggregatorHeight = &a
		}
		if v.HasPruned {
			p := v.Pruned
			out.PrunedHeight = &p
		}
	}
	return out, nil
}

func (s *Server) blockByHeight(r *http.Request) (any, *apiError) {
	id, ch, e := s.chainOf(r)
	if e != nil {
		return nil, e
	}
	h, e := parseHeight("height", r.PathValue("height"))
	if e != nil {
		return nil, e
	}
	if _, e := queryParams(r.URL); e != nil {
		return nil, e
	}
	b, e := s.servedBlock(r, id, ch, h)
	if e != nil {
		return nil, e
	}
	return blockOf(b), nil
}

// servedBlock reads the canonical block of a served height.
func (s *Server) servedBlock(r *http.Request, id string, ch config.Chain, h uint64) (chain.Block, *apiError) {
	v, e := s.viewOf(r, id, ch)
	if e != nil {
		return chain.Block{}, e
	}
	if e := checkHeight(v, "height", h); e != nil {
		return chain.Block{}, e
	}
	bs, err := s.store.BlocksAt(r.Context(), id, []uint64{h})
	if err != nil {
		return chain.Block{}, fromStore(err)
	}
	if len(bs) == 0 {
		return chain.Block{}, s.missing(r, id, ch, "height", h, fmt.Sprintf("no canonical block at height %d", h))
	}
	return bs[0], nil
}

func (s *Server) blockByHash(r *http.Request) (any, *apiError) {
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
	v, e := s.viewOf(r, id, ch)
	if e != nil {
		return nil, e
	}
	if !v.HasWatermark {
		return nil, notFound("no block %s: nothing is indexed yet", hash)
	}
	hs, err := s.store.BlockHeightsByHash(r.Context(), id, hash, v.Lowest(), v.Watermark)
	if err != nil {
		return nil, fromStore(err)
	}
	bs, err := s.store.BlocksAt(r.Context(), id, hs)
	if err != nil {
		return nil, fromStore(err)
	}
	// The look-up says where; the block row itself must still be that
	// block (a reorganisation may have replaced it since).
	for _, b := range bs {
		if b.Hash == hash {
			return blockOf(b), nil
		}
	}
	return nil, notFound("no canonical block %s at or below the watermark %d", hash, v.Watermark)
}

func (s *Server) listBlocks(r *http.Request) (any, *apiError) {
	id, ch, e := s.chainOf(r)
	if e != nil {
		return nil, e
	}
	p, e := queryParams(r.URL, "from", "to", "from_time", "to_time", "limit", "cursor")
	if e != nil {
		return nil, e
	}
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
	limit, e := p.limit(defaultPage, s.cfg.MaxPageSize)
	if e != nil {
		return nil, e
	}
	after, e := p.cursor(cursorBlocks)
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
	v, e := s.viewOf(r, id, ch)
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
		lo, _, ok, err := s.store.BlockAtTime(r.Context(), id, fromTime, false, v.Lowest(), v.Watermark)
		if err != nil {
			return nil, fromStore(err)
		}
		if !ok {
			return out, nil
		}
		hi := v.Watermark
		if toTime != ^uint64(0) {
			h, _, ok, err := s.store.BlockAtTime(r.Context(), id, toTime, true, v.Lowest(), v.Watermark)
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
	bs, err := s.store.BlocksInRange(r.Context(), id, from, last)
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
	id, ch, e := s.chainOf(r)
	if e != nil {
		return nil, e
	}
	h, e := parseHeight("height", r.PathValue("height"))
	if e != nil {
		return nil, e
	}
	p, e := queryParams(r.URL, "limit", "cursor")
	if e != nil {
		return nil, e
	}
	limit, e := p.limit(defaultPage, s.cfg.MaxPageSize)
	if e != nil {
		return nil, e
	}
	after, e := p.cursor(cursorBlockTxs)
	if e != nil {
		return nil, e
	}
	if after != nil && after.Block != h {
		return nil, badParam("cursor", "belongs to another block; pass next_cursor of this listing unchanged")
	}
	v, e := s.viewOf(r, id, ch)
	if e != nil {
		return nil, e
	}
	if e := checkHeight(v, "height", h); e != nil {
		return nil, e
	}
	// The block's hash, to keep only its own transactions: a narrow read,
	// not the block's raw JSON.
	bts, err := s.store.BlockTimes(r.Context(), id, []uint64{h})
	if err != nil {
		return nil, fromStore(err)
	}
	b, ok := bts[h]
	if !ok {
		return nil, s.missing(r, id, ch, "height", h, fmt.Sprintf("no canonical block at height %d", h))
	}
	first := uint32(0)
	if after != nil {
		first = after.Index
	}
	txs, err := s.store.BlockTransactions(r.Context(), id, h, first, limit+1)
	if err != nil {
		return nil, fromStore(err)
	}
	out := page[Transaction]{Items: []Transaction{}, Watermark: v.Watermark}
	for i, tx := range txs {
		if tx.BlockHash != b.Hash {
			continue // a row of another block at this height: being rewritten
		}
		if i == limit {
			c := encodeCursor(cursorBlockTxs, storage.Position{Block: h, Index: tx.Index})
			out.NextCursor = &c
			break
		}
		out.Items = append(out.Items, transactionOf(tx))
	}
	return out, nil
}

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

func (s *Server) addressTxs(r *http.Request) (any, *apiError) {
	id, ch, e := s.chainOf(r)
	if e != nil {
		return nil, e
	}
	addr, e := parseAddress("address", r.PathValue("address"))
	if e != nil {
		return nil, e
	}
	p, e := queryParams(r.URL, "from", "to", "limit", "cursor")
	if e != nil {
		return nil, e
	}
	from, hasFrom, e := p.optHeight("from")
	if e != nil {
		return nil, e
	}
	to, hasTo, e := p.optHeight("to")
	if e != nil {
		return nil, e
	}
	if hasFrom && hasTo && from > to {
		return nil, badParam("from", "%d is above to (%d)", from, to)
	}
	limit, e := p.limit(defaultPage, s.cfg.MaxPageSize)
	if e != nil {
		return nil, e
	}
	after, e := p.cursor(cursorAddressTxs)
	if e != nil {
		return nil, e
	}
	v, e := s.viewOf(r, id, ch)
	if e != nil {
		return nil, e
	}
	if hasFrom && v.IsPruned(from) {
		return nil, gone("from", from, v.Pruned)
	}
	out := page[Transaction]{Items: []Transaction{}, Watermark: v.Watermark}
	if !v.HasWatermark {
		return out, nil
	}
	from = max(from, v.Lowest())
	if !hasTo || to > v.Watermark {
		to = v.Watermark
	}
	if from > to {
		return out, nil
	}
	ps, err := s.store.AddressTxPositions(r.Context(), id, storage.AddressTxQuery{
		Address: addr, From: from, To: to, Desc: true, After: after, Limit: limit + 1,
	})
	if err != nil {
		return nil, fromStore(err)
	}
	more := len(ps) > limit
	if more {
		ps = ps[:limit]
	}
	txs, err := s.store.TransactionsAt(r.Context(), id, ps)
	if err != nil {
		return nil, fromStore(err)
	}
	for _, tx := range slices.Backward(txs) { // newest first
		if tx.From == addr || tx.To == addr || tx.ContractAddress == addr {
			out.Items = append(out.Items, transactionOf(tx))
		}
	}
	if more {
		c := encodeCursor(cursorAddressTxs, ps[len(ps)-1])
		out.NextCursor = &c
	}
	return out, nil
}

func (s *Server) listLogs(r *http.Request) (any, *apiError) {
	id, ch, e := s.chainOf(r)
	if e != nil {
		return nil, e
	}
	p, e := queryParams(r.URL, "from", "to", "address", "topic0", "topic1", "topic2", "topic3", "limit", "cursor")
	if e != nil {
		return nil, e
	}
	from, to, e := s.logRange(p, "from", "to")
	if e != nil {
		return nil, e
	}
	var f storage.LogFilter
	if p.has("address") {
		if f.Address, e = parseAddress("address", p.get("address")); e != nil {
			return nil, e
		}
	}
	for i := range 4 {
		name := fmt.Sprintf("topic%d", i)
		if !p.has(name) {
			continue
		}
		t, e := parseHash(name, p.get(name))
		if e != nil {
			return nil, e
		}
		if len(f.Topics) > 0 {
			f.Or = append(f.Or, false)
		}
		f.Topics = append(f.Topics, storage.TopicTerm{Position: i, Value: t})
	}
	limit, e := p.limit(defaultPage, s.cfg.MaxPageSize)
	if e != nil {
		return nil, e
	}
	after, e := p.cursor(cursorLogs)
	if e != nil {
		return nil, e
	}
	v, e := s.viewOf(r, id, ch)
	if e != nil {
		return nil, e
	}
	if v.IsPruned(from) {
		return nil, gone("from", from, v.Pruned)
	}
	out := page[Log]{Items: []Log{}, Watermark: v.Watermark}
	if !v.HasWatermark {
		return out, nil
	}
	from, to = max(from, v.Lowest()), min(to, v.Watermark)
	if from > to {
		return out, nil
	}
	logs, err := s.store.Logs(r.Context(), id, storage.LogQuery{From: from, To: to, Filter: f, After: after, Limit: limit + 1})
	if err != nil {
		return nil, fromStore(err)
	}
	for i, l := range logs {
		if i == limit {
			c := encodeCursor(cursorLogs, storage.Position{Block: logs[i-1].BlockNumber, Index: logs[i-1].LogIndex})
			out.NextCursor = &c
			break
		}
		out.Items = append(out.Items, logOf(l))
	}
	return out, nil
}

// logRange parses a required, capped height range of a logs query.
func (s *Server) logRange(p params, fromName, toName string) (uint64, uint64, *apiError) {
	if !p.has(fromName) {
		return 0, 0, badParam(fromName, "required: the first height of the range (at most %d heights, api.max_log_range)", s.cfg.MaxLogRange)
	}
	if !p.has(toName) {
		return 0, 0, badParam(toName, "required: the last height of the range (at most %d heights, api.max_log_range)", s.cfg.MaxLogRange)
	}
	from, e := parseHeight(fromName, p.get(fromName))
	if e != nil {
		return 0, 0, e
	}
	to, e := parseHeight(toName, p.get(toName))
	if e != nil {
		return 0, 0, e
	}
	if from > to {
		return 0, 0, badParam(fromName, "%d is above %s (%d)", from, toName, to)
	}
	if to-from >= s.cfg.MaxLogRange {
		return 0, 0, badParam(toName, "the range %d-%d spans %d heights, more than %d (api.max_log_range)",
			from, to, to-from+1, s.cfg.MaxLogRange)
	}
	return from, to, nil
}

// Stats is GET /v1/chains/{id}/stats: totals over heights, from the
// cumulative aggregates by subtraction. They are eventually consistent:
// the aggregator counts heights in order behind the watermark, and
// CountedTo says up to where the totals hold.
type Stats struct {
	From uint64 `json:"from"`
	To   uint64 `json:"to"`
	// CountedFrom and CountedTo are the heights the totals cover (the
	// range clipped to the start height and the aggregator's height);
	// CountedTo is null when none of the range is counted yet.
	CountedFrom      uint64  `json:"counted_from"`
	CountedTo        *uint64 `json:"counted_to"`
	Transactions     uint64  `json:"transactions"`
	Logs             uint64  `json:"logs"`
	Bytes            uint64  `json:"bytes"`
	Complete         bool    `json:"complete"`
	AggregatorHeight *uint64 `json:"aggregator_height"`
	Consistency      string  `json:"consistency"`
}

func (s *Server) stats(r *http.Request) (any, *apiError) {
	id, ch, e := s.chainOf(r)
	if e != nil {
		return nil, e
	}
	p, e := queryParams(r.URL, "from", "to")
	if e != nil {
		return nil, e
	}
	if !p.has("from") {
		return nil, badParam("from", "required: the first height to count")
	}
	if !p.has("to") {
		return nil, badParam("to", "required: the last height to count")
	}
	from, e := parseHeight("from", p.get("from"))
	if e != nil {
		return nil, e
	}
	to, e := parseHeight("to", p.get("to"))
	if e != nil {
		return nil, e
	}
	if from > to {
		return nil, badParam("from", "%d is above to (%d)", from, to)
	}
	v, e := s.viewOf(r, id, ch)
	if e != nil {
		return nil, e
	}
	if to < v.Start {
		return nil, notFound("heights %d-%d are below the chain's start height %d: they are not indexed", from, to, v.Start)
	}
	out := Stats{From: from, To: to, CountedFrom: max(from, v.Start), Consistency: "eventual"}
	if v.HasAggr {
		a := v.Aggregator
		out.AggregatorHeight = &a
	}
	if !v.HasAggr || v.Aggregator < out.CountedFrom {
		return out, nil // nothing of the range counted yet
	}
	top := min(to, v.Aggregator)
	heights := []uint64{top}
	if out.CountedFrom > v.Start {
		heights = append(heights, out.CountedFrom-1)
	}
	rows, err := s.store.AggregatesAt(r.Context(), id, heights)
	if err != nil {
		return nil, fromStore(err)
	}
	for _, h := range heights {
		if _, ok := rows[h]; ok {
			continue
		}
		if v.IsPruned(h) {
			return nil, gone("from", h, v.Pruned)
		}
		return nil, unavailable("the aggregates have no row for height %d though the aggregator is at %d; retry later", h, v.Aggregator)
	}
	upper, below := rows[top], storage.AggregateRow{}
	if out.CountedFrom > v.Start {
		below = rows[out.CountedFrom-1]
	}
	if upper.Txs < below.Txs || upper.Logs < below.Logs || upper.Bytes < below.Bytes {
		return nil, unavailable("the aggregates are being rewritten after a reorganisation; retry later")
	}
	out.Transactions, out.Logs, out.Bytes = upper.Txs-below.Txs, upper.Logs-below.Logs, upper.Bytes-below.Bytes
	out.CountedTo = &top
	out.Complete = top == to
	return out, nil
}
