package api

import (
	"net/http"

	"github.com/tideline-dev/tideline/pkg/storage"
)

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
	q, e := s.request(r, pathNone, "from", "to")
	if e != nil {
		return nil, e
	}
	p := q.p
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
	v, e := q.viewOf()
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
	rows, err := s.store.Chain.AggregatesAt(r.Context(), q.id, heights)
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
