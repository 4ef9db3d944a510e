package api

// The height window of an address's listings (…/txs, …/internal-txs):
// `from` and `to` parsed first, then clipped to the chain's view once the
// rest of the request is checked.

// heightWindow is a listing's `from` and `to`, as given.
type heightWindow struct {
	from, to       uint64
	hasFrom, hasTo bool
}

// window parses `from` and `to` (400 on a bad one, or from above to).
func (q *restReq) window() (heightWindow, *apiError) {
	var w heightWindow
	var e *apiError
	if w.from, w.hasFrom, e = q.p.optHeight("from"); e != nil {
		return w, e
	}
	if w.to, w.hasTo, e = q.p.optHeight("to"); e != nil {
		return w, e
	}
	if w.hasFrom && w.hasTo && w.from > w.to {
		return w, badParam("from", "%d is above to (%d)", w.from, w.to)
	}
	return w, nil
}

// clip is the window within the served heights of v: ok is false when
// nothing is served there; a `from` at or below the pruned height is 410.
func (w heightWindow) clip(v view) (from, to uint64, ok bool, e *apiError) {
	if w.hasFrom && v.IsPruned(w.from) {
		return 0, 0, false, gone("from", w.from, v.Pruned)
	}
	if !v.HasWatermark {
		return 0, 0, false, nil
	}
	from, to = max(w.from, v.Lowest()), w.to
	if !w.hasTo || to > v.Watermark {
		to = v.Watermark
	}
	return from, to, from <= to, nil
}
