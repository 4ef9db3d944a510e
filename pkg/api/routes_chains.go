package api

import (
	"net/http"
	"sort"
	"time"

	"github.com/tideline-dev/tideline/pkg/status"
)

// The chains: GET /v1/chains lists them, GET /v1/chains/{id}/status says
// how far one is indexed.

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
	ChainID   string  `json:"chain_id"`
	Head      *uint64 `json:"head"`      // null when the node did not answer
	Watermark *uint64 `json:"watermark"` // null when nothing is indexed
	// The lag behind the head; null with it, when the node did not answer.
	LagBlocks  *uint64  `json:"lag_blocks"`
	LagSeconds *float64 `json:"lag_seconds"`
	// Scheduler is the running catch-up; null when none runs.
	Scheduler *SchedulerStatus `json:"scheduler"`
	// Held is the height above the watermark while its indexing keeps
	// failing: what holds the watermark, and why; null when none does.
	Held             *HeldHeight `json:"held"`
	AggregatorHeight *uint64     `json:"aggregator_height"`
	PrunedHeight     *uint64     `json:"pruned_height"`
	// Errors says which parts could not be read (the rest is still there).
	Errors []string `json:"errors"`
}

// HeldHeight is a height whose indexing keeps failing, from Temporal's
// record of its last failed attempt (status.Held).
type HeldHeight struct {
	Height   uint64    `json:"height"`
	Attempt  int32     `json:"attempt"`
	Poisoned bool      `json:"poisoned"`
	Since    time.Time `json:"since"`
	Stage    string    `json:"stage"`
	Type     string    `json:"type"`
	Endpoint string    `json:"endpoint"`
	Method   string    `json:"method"`
	Field    string    `json:"field"`
	Reason   string    `json:"reason"`
	Message  string    `json:"message"`
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
	q, e := s.request(r, pathNone)
	if e != nil {
		return nil, e
	}
	id, ch := q.id, q.ch
	c := status.Collect(r.Context(), s.status, []status.Want{{ChainID: id, StartHeight: ch.StartHeight, BlockTime: ch.BlockTime}})[0]
	out := Status{ChainID: id, Errors: []string{}}
	for _, err := range c.Errors {
		out.Errors = append(out.Errors, s.redact(err))
	}
	if c.HeadKnown {
		h, lag, secs := c.Head, c.Lag, c.LagSeconds
		out.Head, out.LagBlocks, out.LagSeconds = &h, &lag, &secs
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
	if h := c.Held; h != nil {
		f := h.Failure
		out.Held = &HeldHeight{Height: h.Height, Attempt: h.Attempt, Poisoned: h.Poisoned, Since: h.Since.UTC(),
			Stage: f.Stage, Type: f.Type, Endpoint: f.Endpoint, Method: f.Method, Field: f.Field,
			Reason: s.redact(f.Reason), Message: s.redact(h.Message)}
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
