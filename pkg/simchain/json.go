package simchain

import (
	"slices"
	"strconv"
)

// JSON is appended by hand into reused buffers: encoding/json would cost
// more than generating the block (reflection, a map per object, escaping
// checks on hex strings that never need them). Field names and order follow
// go-ethereum's answers (blocks and receipts sorted by key, transactions and
// logs in struct order), so raw objects stored by an indexer look like a
// real node's.

const hexDigits = "0123456789abcdef"

func appendQty(dst []byte, v uint64) []byte {
	dst = append(dst, '"', '0', 'x')
	dst = strconv.AppendUint(dst, v, 16)
	return append(dst, '"')
}

// appendQty128 writes hi·2^64+lo as a quantity.
func appendQty128(dst []byte, hi, lo uint64) []byte {
	if hi == 0 {
		return appendQty(dst, lo)
	}
	dst = append(dst, '"', '0', 'x')
	dst = strconv.AppendUint(dst, hi, 16)
	dst = appendU64Hex(dst, lo)
	return append(dst, '"')
}

// appendU64Hex writes v as 16 hex digits.
func appendU64Hex(dst []byte, v uint64) []byte {
	var b [16]byte
	for i := 15; i >= 0; i-- {
		b[i] = hexDigits[v&0xf]
		v >>= 4
	}
	return append(dst, b[:]...)
}

func appendData(dst []byte, b []byte) []byte {
	dst = append(dst, '"', '0', 'x')
	dst = appendHex(dst, b)
	return append(dst, '"')
}

// hexPairs turns a byte into its two hex digits with one lookup: the hex
// of hashes, addresses and blooms is most of the bytes served.
var hexPairs = func() (t [256][2]byte) {
	for i := range t {
		t[i] = [2]byte{hexDigits[i>>4], hexDigits[i&0xf]}
	}
	return t
}()

func appendHex(dst []byte, b []byte) []byte {
	n := len(dst)
	dst = slices.Grow(dst, 2*len(b))[:n+2*len(b)]
	out := dst[n:]
	for i, c := range b {
		p := hexPairs[c]
		out[2*i], out[2*i+1] = p[0], p[1]
	}
	return dst
}

// appendRandHex writes n random bytes of r as hex, without quotes.
func appendRandHex(dst []byte, r *rng, n int) []byte {
	for ; n >= 8; n -= 8 {
		dst = appendU64Hex(dst, r.next())
	}
	if n > 0 {
		var b [16]byte
		tail := appendU64Hex(b[:0], r.next())
		dst = append(dst, tail[:2*n]...)
	}
	return dst
}

func appendRandHash(dst []byte, r *rng) []byte {
	dst = append(dst, '"', '0', 'x')
	dst = appendRandHex(dst, r, 32)
	return append(dst, '"')
}

// quotedHash is a 32-byte hash as a JSON string: "0x" and 64 digits.
type quotedHash [68]byte

func quoteHash(q *quotedHash, h *[32]byte) {
	q[0], q[1], q[2], q[67] = '"', '0', 'x', '"'
	for i, c := range h {
		p := hexPairs[c]
		q[3+2*i], q[4+2*i] = p[0], p[1]
	}
}
