package simchain

import (
	"encoding/binary"
	"sync"

	"github.com/ethereum/go-ethereum/crypto"
)

// Addresses and event signatures come from fixed pools, as on a real chain
// (the same tokens and users recur), which keeps compression in storage
// realistic and lets the logs bloom be exact: the bloom bits of every pool
// entry are computed once with keccak, not per block.

const (
	poolSize      = 1 << 14 // addresses
	contractCount = 1024    // the first addresses of the pool emit logs
	validators    = 64      // the first addresses of the pool mine blocks
	customSigs    = 64      // event signatures of no known standard
	topicSigFlag  = 1 << 15 // topicRef: a signature, not an address
)

// Event signatures of common contracts, so that decoded logs look real.
var knownEvents = []struct {
	sig    string
	topics int // indexed address arguments after the signature
	words  int // data words
	data   dataShape
}{
	{"Transfer(address,address,uint256)", 2, 1, dataWords},
	{"Approval(address,address,uint256)", 2, 1, dataWords},
	{"Swap(address,uint256,uint256,uint256,uint256,address)", 2, 4, dataWords},
	{"Sync(uint112,uint112)", 0, 2, dataWords},
	{"Deposit(address,uint256)", 1, 1, dataWords},
	{"Withdrawal(address,uint256)", 1, 1, dataWords},
	// Token events of the other standards (tokens.go), and logs that look
	// like transfers and are none, as real chains hold them.
	{"Transfer(address,address,uint256)", 3, 0, dataWords},                                // ERC-721: the id indexed
	{"TransferSingle(address,address,address,uint256,uint256)", 3, 2, dataWords},          // ERC-1155
	{"TransferBatch(address,address,address,uint256[],uint256[])", 3, 0, dataBatch},       // ERC-1155
	{"Transfer(address,address,uint256)", 0, 3, dataWords},                                // malformed: nothing indexed
	{"Transfer(address,address,uint256)", 2, 2, dataWords},                                // malformed: 64 bytes of data
	{"TransferBatch(address,address,address,uint256[],uint256[])", 3, 0, dataBatchUneven}, // malformed: lengths differ
}

type bloomBits [3]uint16

type pools struct {
	addrs      [poolSize][20]byte
	addrBloom  [poolSize]bloomBits // the address as a log address
	topicBloom [poolSize]bloomBits // the address padded to a 32-byte topic
	sigs       [][32]byte          // knownEvents, then customSigs
	sigBloom   []bloomBits
	selectors  [][4]byte

	// The same as JSON strings, ready to copy.
	addrHex  [poolSize][44]byte // "0x" and 40 digits
	topicHex [poolSize]quotedHash
	sigHex   []quotedHash
}

var poolCache sync.Map // seed → *pools; tests start many chains

func newPools(seed uint64) *pools {
	if p, ok := poolCache.Load(seed); ok {
		return p.(*pools)
	}
	p := &pools{}
	r := rng{key(seed, domPool, 0, 0, 0)}
	var topic [32]byte
	for i := range p.addrs {
		a := &p.addrs[i]
		binary.BigEndian.PutUint64(a[0:], r.next())
		binary.BigEndian.PutUint64(a[8:], r.next())
		binary.BigEndian.PutUint32(a[16:], uint32(r.next()))
		p.addrBloom[i] = bloomOf(a[:])
		copy(topic[12:], a[:])
		p.topicBloom[i] = bloomOf(topic[:])
		copy(p.addrHex[i][:], appendData(nil, a[:]))
		quoteHash(&p.topicHex[i], &topic)
	}
	for _, e := range knownEvents {
		p.sigs = append(p.sigs, [32]byte(crypto.Keccak256([]byte(e.sig))))
	}
	for i := 0; i < customSigs; i++ {
		var s [32]byte
		for k := 0; k < 4; k++ {
			binary.BigEndian.PutUint64(s[8*k:], r.next())
		}
		p.sigs = append(p.sigs, s)
	}
	for _, s := range p.sigs {
		p.sigBloom = append(p.sigBloom, bloomOf(s[:]))
		p.selectors = append(p.selectors, [4]byte(s[:4]))
		var q quotedHash
		quoteHash(&q, &s)
		p.sigHex = append(p.sigHex, q)
	}
	actual, _ := poolCache.LoadOrStore(seed, p)
	return actual.(*pools)
}

// bloomOf is the 3 bits an item sets in a 2048-bit logs bloom (the yellow
// paper's M3:2048, as go-ethereum's types.Bloom computes it).
func bloomOf(b []byte) bloomBits {
	h := crypto.Keccak256(b)
	var bits bloomBits
	for i := 0; i < 3; i++ {
		bits[i] = (uint16(h[2*i])<<8 | uint16(h[2*i+1])) & 2047
	}
	return bits
}

// setBloom sets bits in a 256-byte bloom, big-endian bit order.
func setBloom(bloom *[256]byte, bits bloomBits) {
	for _, v := range bits {
		bloom[255-v/8] |= 1 << (v % 8)
	}
}
