package simchain

import "math"

// A block is generated from (seed, epoch, height) alone. Each transaction
// has its own stream, keyed by its index, and its shape (type, log count,
// status) comes from the first draw of that stream, so Expected can count
// logs without building the block. Byte strings that nobody checks (input
// data, signatures, log data) are not stored: their stream seed is, and the
// renderer draws them straight into hex.

// Transaction types: the four Ethereum ones a library knows, plus an
// Optimism-style deposit (0x7e) that go-ethereum's types do not, so that
// decoders must keep types they do not understand.
const (
	txLegacy     uint8 = 0x0
	txAccessList uint8 = 0x1
	txDynamicFee uint8 = 0x2
	txBlob       uint8 = 0x3
	txDeposit    uint8 = 0x7e
)

const (
	gwei           = 1_000_000_000
	blockGasLimit  = 36_000_000
	blobGasPerBlob = 131_072
	withdrawals    = 2 // per block, like a quiet beacon chain
)

type block struct {
	number, timestamp uint64
	epoch             uint32
	hash, parent      [32]byte
	hashHex           quotedHash
	miner             uint16
	gasLimit, gasUsed uint64
	baseFee           uint64
	blobGasUsed       uint64
	excessBlobGas     uint64
	size              uint64
	seed              uint64 // state roots, mix hash, withdrawals
	bloom             [256]byte
	txs               []txn
	logs              []logEntry
}

type txn struct {
	hash       [32]byte
	hashHex    quotedHash
	typ        uint8
	from, to   uint16 // pool indices
	create     bool   // to is null, contract is the new address
	contract   [20]byte
	failed     bool
	nonce      uint64
	gas        uint64
	gasUsed    uint64
	cumGas     uint64
	valueHi    uint64
	valueLo    uint64
	gasPrice   uint64 // legacy/access list: the price; others: effective
	maxFee     uint64
	maxPrio    uint64
	effPrice   uint64
	blobFeeCap uint64
	blobs      int
	inputKind  uint8 // 0 empty, 1 call, 2 creation
	inputWords int   // call: 32-byte words after the selector; creation: bytes
	selector   uint16
	accessList bool
	accessAddr uint16
	accessKeys int
	yParity    uint64
	seed       uint64 // r, s, input, source hash, blob hashes, access keys
	logStart   int
	logCount   int
	bloom      [256]byte
}

type logEntry struct {
	addr     uint16
	ntopics  int
	topics   [4]uint16 // pool address index, or topicSigFlag|signature index
	words    int
	data     dataShape
	dataSeed uint64
}

// txShape is what the first draw of a transaction decides.
type txShape struct {
	typ    uint8
	logs   int
	create bool
	failed bool
}

// maxLogs is the top of the uniform log count draw: 0..maxLogs averages
// LogsPerTx.
func maxLogs(cfg *Config) uint64 { return uint64(math.Round(2 * cfg.LogsPerTx)) }

func blockSeed(seed uint64, ep uint32, h uint64) uint64 {
	return key(seed, domBlock, h, uint64(ep), 0)
}

func txSeed(bseed uint64, i int) uint64 { return mix(bseed ^ mix(uint64(i)+1)) }

func shape(u uint64, maxLogs uint64) txShape {
	var s txShape
	switch p := u & 0xff; {
	case p < 51: // 20%
		s.typ = txLegacy
	case p < 64: // 5%
		s.typ = txAccessList
	case p < 77: // 5%
		s.typ = txBlob
	case p < 102: // 10%
		s.typ = txDeposit
	default: // 60%
		s.typ = txDynamicFee
	}
	s.logs = int((u >> 8) % (maxLogs + 1))
	// Only transactions that drew no logs may create contracts or fail, so
	// that the average log count stays what was asked.
	if s.logs == 0 && s.typ != txBlob && s.typ != txDeposit && (u>>24)&0xff < 8 {
		s.create = true
	} else if s.logs == 0 && s.typ != txDeposit && (u>>32)&0xff < 24 {
		s.failed = true
	}
	return s
}

// build fills b with the block at height h of the view's canonical chain.
func (v view) build(b *block, h uint64) {
	cfg := &v.c.cfg
	p := v.c.pools
	ep := v.st.epoch(h)
	bseed := blockSeed(cfg.Seed, ep, h)
	r := rng{bseed}
	b.number, b.epoch = h, ep
	b.timestamp = v.c.timestamp(h)
	blockHashOf(&b.hash, cfg.Seed, ep, h)
	quoteHash(&b.hashHex, &b.hash)
	if h > 0 {
		v.blockHash(&b.parent, h-1)
	} else {
		b.parent = [32]byte{}
	}
	b.miner = uint16(r.intn(validators))
	b.baseFee = gwei/2 + r.intn(20*gwei)
	b.excessBlobGas = r.intn(8) * blobGasPerBlob
	b.seed = r.next()
	b.bloom = [256]byte{}
	b.blobGasUsed = 0
	b.size = 1200 + withdrawals*60

	n := cfg.TxsPerBlock
	if cap(b.txs) < n {
		b.txs = make([]txn, n)
	}
	b.txs = b.txs[:n]
	b.logs = b.logs[:0]
	ml := maxLogs(cfg)
	var cum uint64
	for i := range b.txs {
		t := &b.txs[i]
		ts := txSeed(bseed, i)
		tr := rng{ts}
		s := shape(tr.next(), ml)
		*t = txn{typ: s.typ, create: s.create, failed: s.failed, seed: tr.next()}
		txHashOf(&t.hash, cfg.Seed, ep, h, i)
		quoteHash(&t.hashHex, &t.hash)
		t.from = uint16(contractCount + tr.intn(poolSize-contractCount))
		t.nonce = tr.intn(200_000)
		t.yParity = tr.next() & 1
		switch {
		case s.create:
			t.inputKind, t.inputWords = 2, int(200+tr.intn(1400))
			a := &t.contract
			for k := range a {
				a[k] = byte(tr.next())
			}
			t.gasUsed = 150_000 + tr.intn(1_200_000)
		case s.logs == 0 && tr.next()&1 == 0:
			// A plain transfer between accounts.
			t.to = uint16(contractCount + tr.intn(poolSize-contractCount))
			t.gasUsed = 21_000
		default:
			t.to = uint16(tr.intn(contractCount))
			t.inputKind, t.inputWords = 1, int(1+tr.intn(4))
			t.selector = uint16(tr.intn(uint64(len(p.selectors))))
			t.gasUsed = 30_000 + tr.intn(120_000) + uint64(s.logs)*9_000
		}
		if s.failed {
			t.gasUsed = t.gasUsed/2 + 21_000
		}
		t.gas = t.gasUsed + t.gasUsed/4 + tr.intn(t.gasUsed/2+1)
		if tr.intn(5) < 2 {
			t.valueLo = tr.next() >> (tr.intn(40) + 4)
			if tr.intn(20) == 0 {
				t.valueHi = tr.intn(16)
			}
		}
		switch t.typ {
		case txLegacy, txAccessList:
			t.gasPrice = b.baseFee + tr.intn(3*gwei)
			t.effPrice = t.gasPrice
			t.accessList = t.typ == txAccessList
		case txDynamicFee, txBlob:
			t.maxPrio = tr.intn(3 * gwei)
			t.maxFee = 2*b.baseFee + t.maxPrio
			t.effPrice = b.baseFee + t.maxPrio
			t.gasPrice = t.effPrice
			t.accessList = tr.intn(10) == 0
			if t.typ == txBlob {
				t.blobs = int(1 + tr.intn(3))
				t.blobFeeCap = gwei + tr.intn(10*gwei)
				b.blobGasUsed += uint64(t.blobs) * blobGasPerBlob
			}
		case txDeposit:
			t.gas = 1_000_000
			t.gasUsed = 40_000 + tr.intn(60_000) + uint64(s.logs)*9_000
			t.nonce = tr.intn(1 << 32)
		}
		if t.accessList {
			t.accessAddr = uint16(tr.intn(contractCount))
			t.accessKeys = int(tr.intn(3))
		}
		cum += t.gasUsed
		t.cumGas = cum
		t.logStart = len(b.logs)
		t.logCount = s.logs
		for j := 0; j < s.logs; j++ {
			b.logs = append(b.logs, logEntry{})
			makeLog(&b.logs[len(b.logs)-1], p, &tr, t)
		}
		for j := range b.logs[t.logStart:] {
			l := &b.logs[t.logStart+j]
			setBloom(&t.bloom, p.addrBloom[l.addr])
			for _, tp := range l.topics[:l.ntopics] {
				if tp&topicSigFlag != 0 {
					setBloom(&t.bloom, p.sigBloom[tp&^topicSigFlag])
				} else {
					setBloom(&t.bloom, p.topicBloom[tp])
				}
			}
		}
		if t.logCount > 0 {
			for k := range b.bloom {
				b.bloom[k] |= t.bloom[k]
			}
		}
		b.size += 110 + uint64(t.inputBytes()) + 40*uint64(t.blobs)
	}
	b.gasUsed = cum
	b.gasLimit = max(blockGasLimit, cum+cum/4)
}

func makeLog(l *logEntry, p *pools, r *rng, t *txn) {
	l.addr = uint16(r.intn(contractCount))
	l.dataSeed = r.next()
	k := r.intn(uint64(len(knownEvents)) + 1)
	if k < uint64(len(knownEvents)) {
		e := knownEvents[k]
		l.topics[0] = topicSigFlag | uint16(k)
		for i := 1; i <= e.topics; i++ {
			l.topics[i] = uint16(r.intn(poolSize))
		}
		if e.topics >= 1 && t.from >= contractCount {
			l.topics[1] = t.from // the sender usually appears in its own events
		}
		l.ntopics, l.words, l.data = 1+e.topics, e.words, e.data
		return
	}
	l.topics[0] = topicSigFlag | uint16(len(knownEvents)+int(r.intn(customSigs)))
	l.ntopics = int(1 + r.intn(4))
	for i := 1; i < l.ntopics; i++ {
		l.topics[i] = uint16(r.intn(poolSize))
	}
	l.words, l.data = int(r.intn(5)), dataWords
}

func (t *txn) inputBytes() int {
	switch t.inputKind {
	case 1:
		return 4 + 32*t.inputWords
	case 2:
		return t.inputWords
	}
	return 0
}

// Expected is what a height of the canonical chain holds, for checking what
// an indexer stored.
type Expected struct {
	Height     uint64
	Hash       string // 0x-prefixed lower case, as tideline stores it
	ParentHash string
	Timestamp  uint64
	TxCount    int
	LogCount   int
}

// expected computes Expected without building the block.
func (v view) expected(h uint64) Expected {
	cfg := &v.c.cfg
	ep := v.st.epoch(h)
	var hash, parent [32]byte
	blockHashOf(&hash, cfg.Seed, ep, h)
	if h > 0 {
		v.blockHash(&parent, h-1)
	}
	e := Expected{Height: h, Hash: hexHash(hash), ParentHash: hexHash(parent),
		Timestamp: v.c.timestamp(h), TxCount: cfg.TxsPerBlock}
	bseed := blockSeed(cfg.Seed, ep, h)
	ml := maxLogs(cfg)
	for i := 0; i < cfg.TxsPerBlock; i++ {
		r := rng{txSeed(bseed, i)}
		e.LogCount += shape(r.next(), ml).logs
	}
	return e
}
