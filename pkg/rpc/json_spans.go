package rpc

import (
	"bytes"
	"math"
	"slices"
	"unsafe"
)

// The checking walk that splits a batch answer (splitBatch) is the one
// that checks all of its bytes. The decoders then walk each result again
// to find the members they read, and before spans they walked every
// nested object and array once per level above it: a transaction's bytes
// were checked by the split, by the block's walk, by the walk of the
// transactions array and by the transaction's own walk (a log's by five).
// That was ~23 % of the worker's CPU in a catch-up.
//
// So the split records where each object and array it checked ends, and
// a decoder reading a result of that same answer steps over a nested
// object or array in one look-up instead of walking it: each object a
// decoder reads is walked once, for its own members, its strings (most
// of the bytes) only looked through for their closing quote (checkedStr),
// its numbers, literals and punctuation checked again on the way. A
// result that is not exactly one of the recorded values of that answer
// is walked and checked as without spans; bytes given to a decoder
// without a checking walk before it (single calls, the per-transaction
// receipts, tests) are checked exactly as before.

// spans are the objects and arrays of one checked JSON text, doc: the
// offset each starts at (its '{' or '['), in increasing order, and the
// offset just past its end. doc is never written after it was checked,
// which is what makes the record stay true.
type spans struct {
	doc   []byte
	start []int32
	end   []int32
}

// newSpans records the containers of doc as a scanner checks it; nil when
// doc is too large for 32-bit offsets.
func newSpans(doc []byte) *spans {
	if len(doc) >= math.MaxInt32 {
		return nil
	}
	// About one object or array per 250 bytes of a block answer.
	n := len(doc)/256 + 16
	return &spans{doc: doc, start: make([]int32, 0, n), end: make([]int32, 0, n)}
}

// opened records the container starting at offset at; it returns the
// entry for closed.
func (k *spans) opened(at int) int {
	k.start = append(k.start, int32(at))
	k.end = append(k.end, 0) // not checked (yet)
	return len(k.start) - 1
}

// closed records that the container of entry n was checked up to end.
func (k *spans) closed(n, end int) { k.end[n] = int32(end) }

// endOf returns the end of the checked container starting at offset at.
func (k *spans) endOf(at int) (int, bool) {
	n, found := slices.BinarySearch(k.start, int32(at))
	if !found || k.end[n] == 0 {
		return 0, false
	}
	return int(k.end[n]), true
}

// offset returns where b starts in doc, when b is a slice of doc.
func (k *spans) offset(b []byte) (int, bool) {
	if k == nil || len(b) == 0 || len(k.doc) == 0 {
		return 0, false
	}
	d := uintptr(unsafe.Pointer(unsafe.SliceData(k.doc)))
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	if p < d || p+uintptr(len(b)) > d+uintptr(len(k.doc)) {
		return 0, false
	}
	return int(p - d), true
}

// scannerIn returns a scanner of data that steps over the containers
// known records, when data is exactly one of them (whitespace aside) in
// the text known was made of, and checks everything otherwise. Then the
// scanner's walk meets the same values as the checking walk did, at the
// same offsets: what it steps over, and the strings it reads
// (checkedStr), were checked.
func scannerIn(known *spans, data []byte) scanner {
	s := scanner{data: data}
	base, ok := known.offset(data)
	if !ok {
		return s
	}
	if end, ok := known.endOf(base + s.ws(0)); ok && end-base <= len(data) && s.ws(end-base) == len(data) {
		s.known, s.base = known, base
	}
	return s
}

// checkedStr returns the index past the string at data[i], which the
// walk that recorded known checked: its closing quote is the first one
// not escaped, found with bytes.IndexByte (vectorised) rather than eight
// bytes at a time.
func (s *scanner) checkedStr(i int) (int, bool) {
	d := s.data
	j := i + 1
	for {
		k := bytes.IndexByte(d[j:], '"')
		if k < 0 {
			return 0, false
		}
		j += k
		n := 0 // backslashes before the quote
		for j-1-n > i && d[j-1-n] == '\\' {
			n++
		}
		if n%2 == 0 {
			return j + 1, true
		}
		j++
	}
}

// skip returns the end of the container opened at data[i] when it was
// checked already (and lies within data).
func (s *scanner) skip(i int) (int, bool) {
	if s.known == nil {
		return 0, false
	}
	end, ok := s.known.endOf(s.base + i)
	if !ok || end-s.base > len(s.data) {
		return 0, false
	}
	return end - s.base, true
}
