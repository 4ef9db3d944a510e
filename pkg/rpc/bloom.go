package rpc

import (
	"bytes"
	"encoding/binary"
	"sync/atomic"

	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/tideline-dev/tideline/pkg/chain"
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
// rest.

// bloomBit is one bit a value sets: a byte of the 256 and its mask.
type bloomBit struct{ at, mask uint8 }

// bloomEntry is one remembered value (an address or topic, at most 32
// bytes) and its bits. Entries are never changed once stored.
type bloomEntry struct {
	n    uint8
	key  [hashLen]byte
	bits [3]bloomBit
}

// bloomMemo remembers the bits of recent values, one per slot, a slot
// chosen by the value's last bytes (hashes and addresses are random there;
// an adversary can only make values miss, never get another's bits, since
// the whole value is compared). Lock-free: the client decodes several
// blocks at once. At most ~1 MB.
var bloomMemo [1 << 14]atomic.Pointer[bloomEntry]

func bloomSlot(v []byte) *atomic.Pointer[bloomEntry] {
	var tail uint64
	if len(v) >= 8 {
		tail = binary.LittleEndian.Uint64(v[len(v)-8:])
	}
	return &bloomMemo[(tail*0x9E3779B97F4A7C15)>>50]
}

// bloomer computes the bits of values for one set of receipts.
type bloomer struct {
	keccak crypto.KeccakState
	sum    [hashLen]byte
	val    [hashLen]byte
}

// bits returns the bits value v (at most 32 bytes) sets, as go-ethereum's
// types.Bloom.Add does: three 11-bit numbers from the first six bytes of
// Keccak-256(v).
func (b *bloomer) bits(v []byte) [3]bloomBit {
	slot := bloomSlot(v)
	if e := slot.Load(); e != nil && int(e.n) == len(v) && bytes.Equal(e.key[:e.n], v) {
		return e.bits
	}
	if b.keccak == nil {
		b.keccak = crypto.NewKeccakState()
	}
	b.keccak.Reset()
	b.keccak.Write(v)
	_, _ = b.keccak.Read(b.sum[:])
	e := &bloomEntry{n: uint8(len(v))}
	copy(e.key[:], v)
	for i := range e.bits {
		bit := (uint(b.sum[2*i])<<8 | uint(b.sum[2*i+1])) & (types.BloomBitLength - 1)
		e.bits[i] = bloomBit{at: uint8(types.BloomByteLength - 1 - bit/8), mask: 1 << (bit % 8)}
	}
	slot.Store(e)
	return e.bits
}

// add sets the bits of the value in s (0x-prefixed lower-case hex, the
// decoder's output) in ours; false when s is not such a value or one of
// its bits is not in node's bloom.
func (b *bloomer) add(ours, node *types.Bloom, s string) bool {
	n, ok := hexInto(b.val[:], s)
	if !ok {
		return false
	}
	for _, bit := range b.bits(b.val[:n]) {
		if node[bit.at]&bit.mask == 0 {
			return false
		}
		ours[bit.at] |= bit.mask
	}
	return true
}

// matches reports whether node is the bloom of logs.
func (b *bloomer) matches(node *types.Bloom, logs []chain.Log) bool {
	var ours types.Bloom
	for i := range logs {
		l := &logs[i]
		if !b.add(&ours, node, l.Address) {
			return false
		}
		for _, t := range l.Topics {
			if !b.add(&ours, node, t) {
				return false
			}
		}
	}
	return ours == *node
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
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// bloomOf returns "logsBloom" when the receipt o has a bloom and it is the
// bloom of logs (Raw may then leave it out), and "" otherwise.
func (o object) bloomOf(logs []chain.Log, b *bloomer) (string, error) {
	s, ok, err := o.str("logsBloom")
	if err != nil || !ok {
		return "", err
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
