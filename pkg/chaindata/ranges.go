package chaindata

// HeightRange is an inclusive range of heights: the unit of work the
// scheduler hands out. A single height is a range with From == To (an
// IndexBlock workflow); a longer one is an IndexRange workflow's. A range
// with To < From is empty.
type HeightRange struct {
	From uint64 `json:"from"`
	To   uint64 `json:"to"`
}

// Len is the number of heights in r.
func (r HeightRange) Len() uint64 {
	if r.To < r.From {
		return 0
	}
	return r.To - r.From + 1
}

// Contains says whether h lies in r.
func (r HeightRange) Contains(h uint64) bool { return h >= r.From && h <= r.To }

// Descending lists r's heights newest first (none for an empty range).
func (r HeightRange) Descending() []uint64 {
	if r.To < r.From {
		return nil
	}
	out := make([]uint64, 0, r.Len())
	for h := r.To; ; h-- {
		out = append(out, h)
		if h == r.From {
			return out
		}
	}
}

// TotalLen is the number of heights in rs.
func TotalLen(rs []HeightRange) uint64 {
	var n uint64
	for _, r := range rs {
		n += r.Len()
	}
	return n
}

// Span is the smallest range covering rs (zero for none).
func Span(rs []HeightRange) HeightRange {
	if len(rs) == 0 {
		return HeightRange{}
	}
	s := rs[0]
	for _, r := range rs[1:] {
		s.From = min(s.From, r.From)
		s.To = max(s.To, r.To)
	}
	return s
}

// Overlap counts the heights of rs inside r.
func Overlap(rs []HeightRange, r HeightRange) uint64 {
	var n uint64
	for _, x := range rs {
		lo, hi := max(x.From, r.From), min(x.To, r.To)
		if lo <= hi {
			n += hi - lo + 1
		}
	}
	return n
}

// Subtract removes the heights of cut from ascending ranges.
func Subtract(rs []HeightRange, cut HeightRange) []HeightRange {
	var out []HeightRange
	for _, r := range rs {
		if r.To < cut.From || r.From > cut.To {
			out = append(out, r)
			continue
		}
		if r.From < cut.From {
			out = append(out, HeightRange{From: r.From, To: cut.From - 1})
		}
		if r.To > cut.To {
			out = append(out, HeightRange{From: cut.To + 1, To: r.To})
		}
	}
	return out
}

// Newest keeps the n highest heights of ascending ranges.
func Newest(rs []HeightRange, n uint64) []HeightRange {
	var out []HeightRange
	for i := len(rs) - 1; i >= 0 && n > 0; i-- {
		r := rs[i]
		if r.Len() > n {
			r.From = r.To - n + 1
		}
		n -= r.Len()
		out = append([]HeightRange{r}, out...)
	}
	return out
}

// ToRanges folds ascending heights into ascending disjoint ranges.
func ToRanges(hs []uint64) []HeightRange {
	var out []HeightRange
	for _, h := range hs {
		if n := len(out); n > 0 && out[n-1].To+1 == h {
			out[n-1].To = h
			continue
		}
		out = append(out, HeightRange{From: h, To: h})
	}
	return out
}
