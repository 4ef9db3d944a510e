package api

// The parameters every Etherscan account listing shares (txlist,
// txlistinternal, tokentx, tokennfttx, token1155tx): sort, page and
// offset, startblock and endblock.

// sortParam parses sort: asc (the default) or desc.
func (q *esReq) sortParam() (desc, ok bool) {
	switch q.get("sort") {
	case "", "asc":
		return false, true
	case "desc":
		return true, true
	}
	q.notOK("Invalid sort: %q is neither asc nor desc", clip(q.get("sort")))
	return false, false
}

// accountList is what an account module listing is asked for.
type accountList struct {
	desc        bool
	limit, skip int
	v           view
	lo, hi      uint64
}

// accountListing parses sort, page and offset, reads the view and
// resolves startblock and endblock; ok is false when the answer is sent
// (an error, or "No transactions found" for an empty range).
func (q *esReq) accountListing() (l accountList, ok bool) {
	if l.desc, ok = q.sortParam(); !ok {
		return l, false
	}
	if l.limit, l.skip, ok = q.paging(); !ok {
		return l, false
	}
	if l.v, l.lo, l.hi, ok = q.blockRange(); !ok {
		return l, false
	}
	return l, true
}

// blockRange resolves startblock and endblock to the served heights; ok
// is false when the answer was sent (an error, or nothing served there).
func (q *esReq) blockRange() (v view, lo, hi uint64, ok bool) {
	if v, ok = q.view(); !ok {
		return v, 0, 0, false
	}
	if lo, hi, ok = q.rangeOf("startblock", "endblock", v); !ok {
		return v, 0, 0, false
	}
	if !v.HasWatermark || lo > hi {
		q.empty("No transactions found")
		return v, 0, 0, false
	}
	return v, lo, hi, true
}
