package api

import (
	"strconv"
)

// The block module: block/getblocknobytime, the served block closest to
// a time.

func (q *esReq) blockByTime() {
	ts := q.get("timestamp")
	t, e := parseHeight("timestamp", ts)
	if e != nil {
		q.notOK("Invalid timestamp: %q is not unix seconds", clip(ts))
		return
	}
	var last bool
	switch q.get("closest") {
	case "before":
		last = true
	case "after":
	default:
		q.notOK("Invalid closest: %q is neither before nor after", clip(q.get("closest")))
		return
	}
	v, ok := q.view()
	if !ok {
		return
	}
	if !v.HasWatermark {
		q.notOK("No closest block found")
		return
	}
	h, bt, found, err := q.s.store.Chain.BlockAtTime(q.r.Context(), q.id, t, last, v.Lowest(), v.Watermark)
	if err != nil {
		q.failed(fromStore(err))
		return
	}
	if !found {
		q.notOK("No closest block found")
		return
	}
	// block_by_time says where; the block row must still have that time.
	times, err := q.s.blockTimes(q.r.Context(), q.id, []uint64{h})
	if err != nil {
		q.failed(fromStore(err))
		return
	}
	if got, ok := times[h]; !ok || got != bt {
		q.failed(unavailable("block %d is being rewritten (a reorganisation); retry", h))
		return
	}
	q.ok(strconv.FormatUint(h, 10))
}
