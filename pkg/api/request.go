package api

import (
	"net/http"

	"github.com/tideline-dev/tideline/pkg/config"
)

// What every route under /v1/chains/{id} starts from: its chain, its
// view, and the answers for a height the view does not serve.

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
