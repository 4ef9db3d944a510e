package simchain

import "encoding/binary"

// Hashes are not stored anywhere: a block hash is a function of (seed, fork
// epoch, height) and a transaction hash of (seed, epoch, height, index).
// Their last 12 bytes encode those numbers through a keyed permutation, so
// that eth_getBlockByHash and eth_getTransactionReceipt find the height
// from the hash alone; the other 20 bytes are pseudo-random and make a
// forged or foreign hash fail the check (the hash is rebuilt and compared).

const (
	maxHeight = 1 << 48 // heights fit the 48-bit half of an id
	maxEpoch  = 1 << 24 // reorgs; epochs fit 24 bits of a transaction id
	mask48    = 1<<48 - 1
)

// Domains keep the pseudo-random streams of different things apart.
const (
	domBlockHash uint64 = 0x6b1d_3a5f_0c27_e901 ^ iota<<56
	domTxHash
	domBlock
	domFault
	domPool
	domCall
)

// mix is the SplitMix64 finalizer: a fast bijective scrambler.
func mix(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// rng is SplitMix64: deterministic, cheap, good enough for fake data.
type rng struct{ s uint64 }

func (r *rng) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	return mix(r.s)
}

// intn returns a value in [0, n) (n > 0); the bias is irrelevant here.
func (r *rng) intn(n uint64) uint64 { return r.next() % n }

// key derives the state of a stream from the seed, a domain and up to three
// numbers.
func key(seed, dom, a, b, c uint64) uint64 {
	return mix(mix(mix(seed^dom)+a)^mix(b+0x632b_e59b_d9b4_e019)+c) ^ dom
}

// permute48 is a 4-round Feistel network over two 48-bit halves, keyed by
// the seed: a bijection, so unpermute48 recovers (a, b).
func permute48(seed, dom, a, b uint64) (uint64, uint64) {
	for i := uint64(0); i < 4; i++ {
		a, b = b, a^(mix(seed^dom^(i<<56)^b)&mask48)
	}
	return a, b
}

func unpermute48(seed, dom, a, b uint64) (uint64, uint64) {
	for i := uint64(4); i > 0; i-- {
		a, b = b^(mix(seed^dom^((i-1)<<56)^a)&mask48), a
	}
	return a, b
}

// makeID writes a 32-byte id whose last 12 bytes encode (a, b), both < 2^48.
func makeID(dst *[32]byte, seed, dom, a, b uint64) {
	r := rng{key(seed, dom, a, b, 0)}
	binary.BigEndian.PutUint64(dst[0:], r.next())
	binary.BigEndian.PutUint64(dst[8:], r.next())
	binary.BigEndian.PutUint32(dst[16:], uint32(r.next()))
	pa, pb := permute48(seed, dom, a, b)
	put48(dst[20:], pa)
	put48(dst[26:], pb)
}

// readID returns the (a, b) an id of domain dom would encode, and whether
// id is really the id of those numbers.
func readID(id *[32]byte, seed, dom uint64) (a, b uint64, ok bool) {
	a, b = unpermute48(seed, dom, get48(id[20:]), get48(id[26:]))
	var again [32]byte
	makeID(&again, seed, dom, a, b)
	return a, b, again == *id
}

func put48(dst []byte, v uint64) {
	_ = dst[5]
	dst[0], dst[1], dst[2] = byte(v>>40), byte(v>>32), byte(v>>24)
	dst[3], dst[4], dst[5] = byte(v>>16), byte(v>>8), byte(v)
}

func get48(b []byte) uint64 {
	_ = b[5]
	return uint64(b[0])<<40 | uint64(b[1])<<32 | uint64(b[2])<<24 | uint64(b[3])<<16 | uint64(b[4])<<8 | uint64(b[5])
}

// blockHashOf is the hash of the block at height h of fork epoch ep.
func blockHashOf(dst *[32]byte, seed uint64, ep uint32, h uint64) {
	makeID(dst, seed, domBlockHash, h, uint64(ep))
}

// txHashOf is the hash of transaction i of the block at height h, epoch ep.
func txHashOf(dst *[32]byte, seed uint64, ep uint32, h uint64, i int) {
	makeID(dst, seed, domTxHash, h, uint64(ep)<<24|uint64(i))
}
