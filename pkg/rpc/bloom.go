package rpc

import (
	"bytes"
	"encoding/hex"
	"sync/atomic"

	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/tideline-dev/tideline/pkg/chaindata"
)

// A receipt's logsBloom is a function of its logs (each log's address and
// topics set three bits of 2,048). It is half of what a receipt's Raw
// would hold, so when the node's bloom is exactly the one its logs make,
// Raw leaves it out: anyone can compute it again from the stored logs.
// A bloom that differs (a node that dropped or changed logs, or a chain
// that fills the field its own way) stays in Raw as the node sent it.
//
// Proving that the bloom is exact takes the three bits of every address
// and topic, a Keccak-256 each: ~8 % of the worker's CPU with a hash per
// value. The same values come back all the time (a token's address and
// its Transfer signature in most logs of a block, popular contracts in
// every block), and their bits never change, so the bits of the last
// values seen are kept (bloomMemo) and a value is hashed again only when
// it is not there. The check itself is unchanged: every value's bits come
// from a hash of that exact value, and the node's bloom must equal their
// union bit for bit. A bit of a value that the node's bloom lacks ends the
// check at once (the logs cannot make that bloom), without hashing the
// rest. The usual answer is first compared as text: the node's string is
// the lower-case hex of the logs' bloom, byte for byte, without decoding
// and checking its 512 digits first (sameText); any other string takes
// the whole check.

// bloomBit is one bit a value sets: a byte of the 256 and its mask.
type bloomBit struct{ at, mask uint8 }

// bloomEntry is one remembered value, as the decoder's text (0x and the
// hex of at most 32 bytes; kept as text so that a value seen before is
// not even decoded), and its bits. Entries are never changed once stored.
type bloomEntry struct {
	n    uint8
	key  [2 + 2*hashLen]byte
	bits [3]bloomBit
}

// bloomMemo remembers the bits of recent values, one per slot, a slot
// chosen by the value's last characters (hashes and addresses are random
// there; an adversary can only make values miss, never get another's
// bits, since the whole value is compared). Lock-free: the client decodes
// several blocks at once. At most ~1.5 MB.
var bloomMemo [1 << 14]atomic.Pointer[bloomEntry]

func bloomSlot(v string) *atomic.Pointer[bloomEntry] {
	var tail uint64
	if len(v) >= 8 {
		for _, c := range []byte(v[len(v)-8:]) {
			tail = tail<<8 | uint64(c)
		}
	}
	return &bloomMemo[(tail*0x9E3779B97F4A7C15)>>50]
}

// bloomer computes the bits of values for one set of receipts.
type bloomer struct {
	keccak crypto.KeccakState
	sum    [hashLen]byte
	val    [hashLen]byte
	text   [2 * types.BloomByteLength]byte
}

// bits returns the bits the value in s (0x-prefixed hex of at most 32
// bytes) sets, as go-ethereum's types.Bloom.Add does: three 11-bit
// numbers from the first six bytes of Keccak-256 of the value; false when
// s is not such a value.
func (b *bloomer) bits(s string) ([3]bloomBit, bool) {
	slot := bloomSlot(s)
	if e := slot.Load(); e != nil && int(e.n) == len(s) && string(e.key[:e.n]) == s {
		return e.bits, true
	}
	n, ok := hexInto(b.val[:], s)
	if !ok {
		return [3]bloomBit{}, false
	}
	if b.keccak == nil {
		b.keccak = crypto.NewKeccakState()
	}
	b.keccak.Reset()
	b.keccak.Write(b.val[:n])
	_, _ = b.keccak.Read(b.sum[:])
	e := &bloomEntry{n: uint8(len(s))}
	copy(e.key[:], s)
	for i := range e.bits {
		bit := (uint(b.sum[2*i])<<8 | uint(b.sum[2*i+1])) & (types.BloomBitLength - 1)
		e.bits[i] = bloomBit{at: uint8(types.BloomByteLength - 1 - bit/8), mask: 1 << (bit % 8)}
	}
	slot.Store(e)
	return e.bits, true
}

// add sets the bits of the value in s (0x-prefixed hex, the decoder's
// output) in ours; false when s is not such a value or one of its bits
// is not in node's bloom (nil: any bit is).
func (b *bloomer) add(ours, node *types.Bloom, s string) bool {
	bits, ok := b.bits(s)
	if !ok {
		return false
	}
	for _, bit := range bits {
		if node != nil && node[bit.at]&bit.mask == 0 {
			return false
		}
		ours[bit.at] |= bit.mask
	}
	return true
}

// of sets in ours the bloom of logs; false when a value is not hex.
func (b *bloomer) of(ours, node *types.Bloom, logs []chaindata.Log) bool {
	for i := range logs {
		l := &logs[i]
		if !b.add(ours, node, l.Address) {
			return false
		}
		for _, t := range l.Topics {
			if !b.add(ours, node, t) {
				return false
			}
		}
	}
	return true
}

// matches reports whether node is the bloom of logs.
func (b *bloomer) matches(node *types.Bloom, logs []chaindata.Log) bool {
	var ours types.Bloom
	return b.of(&ours, node, logs) && ours == *node
}

// sameText reports whether s is exactly the lower-case text of the bloom
// of logs: the usual answer, told without decoding s. false says nothing
// (upper case, another bloom, not hex at all).
func (b *bloomer) sameText(s []byte, logs []chaindata.Log) bool {
	if len(s) != 2+len(b.text) || s[0] != '0' || s[1] != 'x' {
		return false
	}
	var ours types.Bloom
	if !b.of(&ours, nil, logs) {
		return false
	}
	hex.Encode(b.text[:], ours[:])
	return bytes.Equal(b.text[:], s[2:])
}

// hexInto decodes a 0x-prefixed hex string of at most len(dst) bytes
// without allocating; either case.
func hexInto[T text](dst []byte, s T) (int, bool) {
	if len(s) < 2 || len(s)%2 != 0 || (len(s)-2)/2 > len(dst) {
		return 0, false
	}
	n := 0
	for i := 2; i < len(s); i += 2 {
		hi, ok1 := nibble(s[i])
		lo, ok2 := nibble(s[i+1])
		if !ok1 || !ok2 {
			return 0, false
		}
		dst[n] = hi<<4 | lo
		n++
	}
	return n, true
}

func nibble(c byte) (byte, bool) {
	v := nibbles[c]
	return v, v < 16
}

// nibbles is each byte's hex value, 0xff for a byte that is not a digit.
var nibbles = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for i, c := range []byte("0123456789abcdef") {
		t[c] = byte(i)
	}
	for i, c := range []byte("ABCDEF") {
		t[c] = byte(10 + i)
	}
	return t
}()

// bloomOf returns "logsBloom" when the receipt o has a bloom and it is the
// bloom of logs (Raw may then leave it out), and "" otherwise.
func (o object) bloomOf(logs []chaindata.Log, b *bloomer) (string, error) {
	s, ok, err := o.str("logsBloom")
	if err != nil || !ok {
		return "", err
	}
	if b.sameText(s, logs) {
		return "logsBloom", nil // lower-case hex of the right bloom: well formed
	}
	if err := checkHexBytes(s, types.BloomByteLength); err != nil {
		return "", o.malformed("logsBloom", "%v", err)
	}
	var node types.Bloom
	hexInto(node[:], s) // checked above
	if !b.matches(&node, logs) {
		return "", nil
	}
	return "logsBloom", nil
}
