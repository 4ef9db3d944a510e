package api

import (
	"net/http"

	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/storage"
)

// What every route under /v1/chains/{id} starts from. A REST handler's
// first call is s.request: it resolves the chain (404), parses the path's
// own parameter and checks the query's names (400), in that order, so the
// first fault is the one answered. The chain's view is read after the
// handler has checked the rest of its parameters (viewOf): a malformed
// request costs no read.

// defaultPage is a listing's page size when `limit` is not given.
const defaultPage = 25

// chainReq is a request about one served chain, the {id} of its path
// (the REST routes' restReq and the Etherscan route's esReq).
type chainReq struct {
	s  *Server
	r  *http.Request
	id string
	ch config.Chain
}

// chainOf resolves the {id} path segment.
func (s *Server) chainOf(r *http.Request) (chainReq, *apiError) {
	id := r.PathValue("id")
	ch, ok := s.chainMap()[id]
	if !ok {
		return chainReq{}, notFound("chain %q is not served here; GET /v1/chains lists the chains", clip(id))
	}
	return chainReq{s: s, r: r, id: id, ch: ch}, nil
}

// viewOf reads (or reuses) the chain's view.
func (c chainReq) viewOf() (view, *apiError) {
	v, err := c.s.views.get(c.r.Context(), c.id, c.ch.StartHeight)
	if err != nil {
		return view{}, fromStore(err)
	}
	if v.HasWatermark {
		c.s.m.watermark.WithLabelValues(c.id).Set(float64(v.Watermark))
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
func (c chainReq) missing(param string, h uint64, what string) *apiError {
	v, err := c.s.views.fresh(c.r.Context(), c.id, c.ch.StartHeight)
	if err != nil {
		return fromStore(err)
	}
	if v.IsPruned(h) {
		return gone(param, h, v.Pruned)
	}
	return notFound("%s", what)
}

// pathParam is the parameter a REST route's path holds besides {id}.
type pathParam int

const (
	pathNone    pathParam = iota
	pathHeight            // {height}: a decimal height
	pathHash              // {hash}: a 32-byte hash
	pathAddress           // {address}: a 20-byte address
)

// restReq is a REST request under /v1/chains/{id} whose chain, path
// parameter and query names are checked.
type restReq struct {
	chainReq
	p       params
	height  uint64 // {height}, for pathHeight
	hash    string // {hash}, for pathHash
	address string // {address}, for pathAddress
}

// request begins a REST handler: the chain, then the path's parameter,
// then the query, which may hold only the names given.
func (s *Server) request(r *http.Request, path pathParam, query ...string) (*restReq, *apiError) {
	c, e := s.chainOf(r)
	if e != nil {
		return nil, e
	}
	q := &restReq{chainReq: c}
	switch path {
	case pathHeight:
		q.height, e = parseHeight("height", r.PathValue("height"))
	case pathHash:
		q.hash, e = parseHash("hash", r.PathValue("hash"))
	case pathAddress:
		q.address, e = parseAddress("address", r.PathValue("address"))
	}
	if e != nil {
		return nil, e
	}
	if q.p, e = queryParams(r.URL, query...); e != nil {
		return nil, e
	}
	return q, nil
}

// listing parses a listing's `limit` and `cursor` (one of kind); after
// is nil on the first page.
func (q *restReq) listing(kind string) (limit int, after *storage.Position, e *apiError) {
	if limit, e = q.p.limit(defaultPage, q.s.cfg.MaxPageSize); e != nil {
		return 0, nil, e
	}
	if after, e = q.p.cursor(kind); e != nil {
		return 0, nil, e
	}
	return limit, after, nil
}
