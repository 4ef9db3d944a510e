package rpc

import (
	"strconv"
	"unsafe"
)

// arena holds the strings and byte copies of one decoded block (or set of
// receipts) in a few large allocations instead of one small allocation
// each: hundreds of hashes, addresses and raw objects per block made the
// garbage collector a large share of decoding. Bytes handed out are never
// written again, which is what makes the strings over them immutable; the
// cost is that any one string keeps its chunk alive, and a block's values
// live and die together anyway. A nil *arena allocates each value alone.
type arena struct {
	buf  []byte   // the current chunk; handed out up to len
	strs []string // topic lists, cut from one slice
	tmp  []byte   // reused work space (re-encoding objects)
}

func newArena(size int) *arena {
	return &arena{buf: make([]byte, 0, size)}
}

// alloc returns n fresh bytes.
func (a *arena) alloc(n int) []byte {
	if a == nil {
		return make([]byte, n)
	}
	if cap(a.buf)-len(a.buf) < n {
		a.buf = make([]byte, 0, max(n, cap(a.buf), 4096))
	}
	start := len(a.buf)
	a.buf = a.buf[:start+n]
	return a.buf[start : start+n : start+n]
}

func (a *arena) copy(b []byte) []byte {
	out := a.alloc(len(b))
	copy(out, b)
	return out
}

// str views bytes from alloc, never written again, as a string.
func (a *arena) str(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// hex is parseHexBytes with the result in the arena, checked and
// lower-cased in one pass (checkHexBytes names what is wrong with a
// value that fails).
func (a *arena) hex(s []byte, size int) (string, error) {
	if !hexShape(s, size) {
		return "", checkHexBytes(s, size)
	}
	b := a.alloc(len(s))
	b[0], b[1] = '0', 'x'
	for i := 2; i < len(s); i++ {
		c := lowerHexDigit[s[i]]
		if c == 0 {
			return "", checkHexBytes(s, size)
		}
		b[i] = c
	}
	return a.str(b), nil
}

// decimal is parseBig with the result in the arena when it fits 64 bits,
// as wei amounts nearly always do.
func (a *arena) decimal(s []byte) (string, error) {
	digits, err := hexDigits(s)
	if err != nil {
		return "", err
	}
	if short := trimZeros(digits); len(short) <= 16 {
		var tmp [20]byte
		return a.str(a.copy(strconv.AppendUint(tmp[:0], hexUint(short), 10))), nil
	}
	return parseBig(s)
}

// strings returns a []string of length n.
func (a *arena) strings(n int) []string {
	if a == nil {
		return make([]string, n)
	}
	if cap(a.strs)-len(a.strs) < n {
		a.strs = make([]string, 0, max(n, 2*cap(a.strs), 64))
	}
	start := len(a.strs)
	a.strs = a.strs[:start+n]
	return a.strs[start : start+n : start+n]
}

// scratch returns an empty work buffer; keepScratch hands it back, grown.
func (a *arena) scratch() []byte {
	if a == nil {
		return nil
	}
	return a.tmp[:0]
}

func (a *arena) keepScratch(b []byte) {
	if a != nil {
		a.tmp = b
	}
}
