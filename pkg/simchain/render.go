package simchain

import (
	"slices"
	"strconv"
	"strings"
)

// JSON is appended by hand into reused buffers: encoding/json would cost
// more than generating the block (reflection, a map per object, escaping
// checks on hex strings that never need them). Field names and order follow
// go-ethereum's answers (blocks and receipts sorted by key, transactions and
// logs in struct order), so raw objects stored by an indexer look like a
// real node's.

const (
	emptyRoot      = "0x56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421"
	emptyUncleHash = "0x1dcc4de8dec75d7aab85b567b6ccd41ad312451b948a7413f0a142fd40d49347"
	emptyRequests  = "0xe3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	extraData      = "0x73696d636861696e" // "simchain"
)

// Substreams of a transaction's seed, one per rendered byte string, so each
// renders the same wherever it appears.
const (
	subInput uint64 = iota + 1
	subSig
	subSource
	subBlobs
	subAccess
)

const hexDigits = "0123456789abcdef"

// renderer writes the answers of one view of the chain. A corrupt answer
// is valid JSON that breaks a check of the caller's decoder.
type renderer struct {
	v       view
	p       *pools
	chainID uint64
}

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

// zeroBloom is the logs bloom of a receipt without logs.
var zeroBloom = `"0x` + strings.Repeat("0", 512) + `"`

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

// Pool entries and the block's own hashes recur dozens of times per answer
// (the block hash is in every transaction, receipt and log): their quoted
// hex is made once and copied.

func (rd *renderer) appendAddr(dst []byte, idx uint16) []byte {
	return append(dst, rd.p.addrHex[idx][:]...)
}

func (rd *renderer) appendTopic(dst []byte, t uint16) []byte {
	if t&topicSigFlag != 0 {
		return append(dst, rd.p.sigHex[t&^topicSigFlag][:]...)
	}
	return append(dst, rd.p.topicHex[t][:]...)
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

// roots are the block's hashes that nothing checks, drawn in a fixed order.
type roots struct{ mix, beacon, receipts, state, txs, withdrawals [32]byte }

func (b *block) roots() roots {
	r := rng{b.seed}
	var rs roots
	for _, h := range []*[32]byte{&rs.mix, &rs.beacon, &rs.receipts, &rs.state, &rs.txs, &rs.withdrawals} {
		for k := 0; k < 32; k += 8 {
			u := r.next()
			for j := 0; j < 8; j++ {
				h[k+j] = byte(u >> (56 - 8*j))
			}
		}
	}
	return rs
}

// appendBlock writes the block object: with full transactions, or their
// hashes only; header leaves out what newHeads notifications lack.
func (rd *renderer) appendBlock(dst []byte, b *block, full, header, corrupt bool) []byte {
	rs := b.roots()
	dst = append(dst, `{"baseFeePerGas":`...)
	dst = appendQty(dst, b.baseFee)
	dst = append(dst, `,"blobGasUsed":`...)
	dst = appendQty(dst, b.blobGasUsed)
	dst = append(dst, `,"difficulty":"0x0","excessBlobGas":`...)
	dst = appendQty(dst, b.excessBlobGas)
	dst = append(dst, `,"extraData":"`+extraData+`","gasLimit":`...)
	dst = appendQty(dst, b.gasLimit)
	dst = append(dst, `,"gasUsed":`...)
	dst = appendQty(dst, b.gasUsed)
	dst = append(dst, `,"hash":`...)
	if corrupt {
		dst = appendData(dst, b.hash[:31])
	} else {
		dst = append(dst, b.hashHex[:]...)
	}
	dst = append(dst, `,"logsBloom":`...)
	dst = appendData(dst, b.bloom[:])
	dst = append(dst, `,"miner":`...)
	dst = rd.appendAddr(dst, b.miner)
	dst = append(dst, `,"mixHash":`...)
	dst = appendData(dst, rs.mix[:])
	dst = append(dst, `,"nonce":"0x0000000000000000","number":`...)
	dst = appendQty(dst, b.number)
	dst = append(dst, `,"parentBeaconBlockRoot":`...)
	dst = appendData(dst, rs.beacon[:])
	dst = append(dst, `,"parentHash":`...)
	dst = appendData(dst, b.parent[:])
	dst = append(dst, `,"receiptsRoot":`...)
	if len(b.txs) == 0 {
		dst = append(dst, `"`+emptyRoot+`"`...)
	} else {
		dst = appendData(dst, rs.receipts[:])
	}
	dst = append(dst, `,"requestsHash":"`+emptyRequests+`","sha3Uncles":"`+emptyUncleHash+`"`...)
	if !header {
		dst = append(dst, `,"size":`...)
		dst = appendQty(dst, b.size)
	}
	dst = append(dst, `,"stateRoot":`...)
	dst = appendData(dst, rs.state[:])
	dst = append(dst, `,"timestamp":`...)
	dst = appendQty(dst, b.timestamp)
	if !header {
		dst = append(dst, `,"transactions":[`...)
		for i := range b.txs {
			if i > 0 {
				dst = append(dst, ',')
			}
			if full {
				dst = rd.appendTx(dst, b, i)
			} else {
				dst = append(dst, b.txs[i].hashHex[:]...)
			}
		}
		dst = append(dst, ']')
	}
	dst = append(dst, `,"transactionsRoot":`...)
	if len(b.txs) == 0 {
		dst = append(dst, `"`+emptyRoot+`"`...)
	} else {
		dst = appendData(dst, rs.txs[:])
	}
	if !header {
		dst = append(dst, `,"uncles":[],"withdrawals":[`...)
		wr := rng{b.seed ^ 0x5749_5448_4452_5741}
		for k := uint64(0); k < withdrawals; k++ {
			if k > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"index":`...)
			dst = appendQty(dst, b.number*withdrawals+k)
			dst = append(dst, `,"validatorIndex":`...)
			dst = appendQty(dst, wr.intn(1_500_000))
			dst = append(dst, `,"address":`...)
			dst = rd.appendAddr(dst, uint16(contractCount+wr.intn(poolSize-contractCount)))
			dst = append(dst, `,"amount":`...)
			dst = appendQty(dst, 10_000_000+wr.intn(10_000_000))
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	dst = append(dst, `,"withdrawalsRoot":`...)
	dst = appendData(dst, rs.withdrawals[:])
	return append(dst, '}')
}

// appendTx writes transaction i of b as eth_getBlockByNumber(h, true) and
// eth_getTransactionByHash show it.
func (rd *renderer) appendTx(dst []byte, b *block, i int) []byte {
	t := &b.txs[i]
	dst = append(dst, `{"blockHash":`...)
	dst = append(dst, b.hashHex[:]...)
	dst = append(dst, `,"blockNumber":`...)
	dst = appendQty(dst, b.number)
	dst = append(dst, `,"from":`...)
	dst = rd.appendAddr(dst, t.from)
	dst = append(dst, `,"gas":`...)
	dst = appendQty(dst, t.gas)
	dst = append(dst, `,"gasPrice":`...)
	dst = appendQty(dst, t.gasPrice)
	if t.typ == txDynamicFee || t.typ == txBlob {
		dst = append(dst, `,"maxFeePerGas":`...)
		dst = appendQty(dst, t.maxFee)
		dst = append(dst, `,"maxPriorityFeePerGas":`...)
		dst = appendQty(dst, t.maxPrio)
	}
	if t.typ == txBlob {
		dst = append(dst, `,"maxFeePerBlobGas":`...)
		dst = appendQty(dst, t.blobFeeCap)
	}
	dst = append(dst, `,"hash":`...)
	dst = append(dst, t.hashHex[:]...)
	dst = append(dst, `,"input":"0x`...)
	ir := rng{mix(t.seed + subInput)}
	switch t.inputKind {
	case 1:
		s := rd.p.selectors[t.selector]
		dst = appendHex(dst, s[:])
		for k := 0; k < t.inputWords; k++ {
			// Arguments are mostly addresses and amounts: zero-padded.
			dst = append(dst, "000000000000000000000000"...)
			dst = appendRandHex(dst, &ir, 20)
		}
	case 2:
		dst = append(dst, "6080604052"...)
		dst = appendRandHex(dst, &ir, t.inputWords-5)
	}
	dst = append(dst, `","nonce":`...)
	dst = appendQty(dst, t.nonce)
	dst = append(dst, `,"to":`...)
	if t.create {
		dst = append(dst, "null"...)
	} else {
		dst = rd.appendAddr(dst, t.to)
	}
	dst = append(dst, `,"transactionIndex":`...)
	dst = appendQty(dst, uint64(i))
	dst = append(dst, `,"value":`...)
	dst = appendQty128(dst, t.valueHi, t.valueLo)
	dst = append(dst, `,"type":`...)
	dst = appendQty(dst, uint64(t.typ))
	if t.typ == txDeposit {
		dst = append(dst, `,"v":"0x0","r":"0x0","s":"0x0","sourceHash":`...)
		sr := rng{mix(t.seed + subSource)}
		dst = appendRandHash(dst, &sr)
		dst = append(dst, `,"mint":`...)
		dst = appendQty128(dst, t.valueHi, t.valueLo)
		return append(dst, `,"isSystemTx":false}`...)
	}
	if t.typ != txLegacy {
		dst = append(dst, `,"accessList":[`...)
		if t.accessList {
			dst = append(dst, `{"address":`...)
			dst = rd.appendAddr(dst, t.accessAddr)
			dst = append(dst, `,"storageKeys":[`...)
			ar := rng{mix(t.seed + subAccess)}
			for k := 0; k < t.accessKeys; k++ {
				if k > 0 {
					dst = append(dst, ',')
				}
				dst = appendRandHash(dst, &ar)
			}
			dst = append(dst, "]}"...)
		}
		dst = append(dst, ']')
	}
	dst = append(dst, `,"chainId":`...)
	dst = appendQty(dst, rd.chainID)
	if t.typ == txBlob {
		dst = append(dst, `,"blobVersionedHashes":[`...)
		br := rng{mix(t.seed + subBlobs)}
		for k := 0; k < t.blobs; k++ {
			if k > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `"0x01`...)
			dst = appendRandHex(dst, &br, 31)
			dst = append(dst, '"')
		}
		dst = append(dst, ']')
	}
	dst = append(dst, `,"v":`...)
	if t.typ == txLegacy {
		dst = appendQty(dst, rd.chainID*2+35+t.yParity) // EIP-155
	} else {
		dst = appendQty(dst, t.yParity)
	}
	sr := rng{mix(t.seed + subSig)}
	// r and s are 256-bit quantities: no leading zero digit, s in the low
	// half of the curve order as nodes require.
	dst = append(dst, `,"r":"0x`...)
	dst = appendU64Hex(dst, sr.next()|1<<60)
	dst = appendRandHex(dst, &sr, 24)
	dst = append(dst, `","s":"0x`...)
	dst = appendU64Hex(dst, (sr.next()|1<<60)&^(1<<63))
	dst = appendRandHex(dst, &sr, 24)
	dst = append(dst, '"')
	if t.typ != txLegacy {
		dst = append(dst, `,"yParity":`...)
		dst = appendQty(dst, t.yParity)
	}
	return append(dst, '}')
}

// appendReceipts writes eth_getBlockReceipts' answer.
func (rd *renderer) appendReceipts(dst []byte, b *block, corrupt bool) []byte {
	if corrupt && len(b.txs) == 0 {
		return append(dst, "[null]"...)
	}
	dst = append(dst, '[')
	for i := range b.txs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = rd.appendReceipt(dst, b, i, corrupt && i == 0)
	}
	return append(dst, ']')
}

func (rd *renderer) appendReceipt(dst []byte, b *block, i int, corrupt bool) []byte {
	t := &b.txs[i]
	dst = append(dst, '{')
	if t.typ == txBlob {
		dst = append(dst, `"blobGasPrice":"0x1","blobGasUsed":`...)
		dst = appendQty(dst, uint64(t.blobs)*blobGasPerBlob)
		dst = append(dst, ',')
	}
	dst = append(dst, `"blockHash":`...)
	if corrupt {
		dst = appendData(dst, b.hash[:31])
	} else {
		dst = append(dst, b.hashHex[:]...)
	}
	dst = append(dst, `,"blockNumber":`...)
	dst = appendQty(dst, b.number)
	dst = append(dst, `,"contractAddress":`...)
	if t.create {
		dst = appendData(dst, t.contract[:])
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, `,"cumulativeGasUsed":`...)
	dst = appendQty(dst, t.cumGas)
	if t.typ == txDeposit {
		dst = append(dst, `,"depositNonce":`...)
		dst = appendQty(dst, t.nonce)
		dst = append(dst, `,"depositReceiptVersion":"0x1"`...)
	}
	dst = append(dst, `,"effectiveGasPrice":`...)
	dst = appendQty(dst, t.effPrice)
	dst = append(dst, `,"from":`...)
	dst = rd.appendAddr(dst, t.from)
	dst = append(dst, `,"gasUsed":`...)
	dst = appendQty(dst, t.gasUsed)
	dst = append(dst, `,"logs":[`...)
	for j := 0; j < t.logCount; j++ {
		if j > 0 {
			dst = append(dst, ',')
		}
		dst = rd.appendLog(dst, b, i, t.logStart+j)
	}
	dst = append(dst, `],"logsBloom":`...)
	if t.logCount == 0 {
		dst = append(dst, zeroBloom...)
	} else {
		dst = appendData(dst, t.bloom[:])
	}
	if t.failed {
		dst = append(dst, `,"status":"0x0","to":`...)
	} else {
		dst = append(dst, `,"status":"0x1","to":`...)
	}
	if t.create {
		dst = append(dst, "null"...)
	} else {
		dst = rd.appendAddr(dst, t.to)
	}
	dst = append(dst, `,"transactionHash":`...)
	dst = append(dst, t.hashHex[:]...)
	dst = append(dst, `,"transactionIndex":`...)
	dst = appendQty(dst, uint64(i))
	dst = append(dst, `,"type":`...)
	dst = appendQty(dst, uint64(t.typ))
	return append(dst, '}')
}

func (rd *renderer) appendLog(dst []byte, b *block, i, li int) []byte {
	l := &b.logs[li]
	dst = append(dst, `{"address":`...)
	dst = rd.appendAddr(dst, l.addr)
	dst = append(dst, `,"topics":[`...)
	for k, tp := range l.topics[:l.ntopics] {
		if k > 0 {
			dst = append(dst, ',')
		}
		dst = rd.appendTopic(dst, tp)
	}
	dst = append(dst, `],"data":"0x`...)
	dr := rng{l.dataSeed}
	for k := 0; k < l.words; k++ {
		// Amounts: a 32-byte word with a value of up to 64 bits.
		dst = append(dst, "000000000000000000000000000000000000000000000000"...)
		dst = appendU64Hex(dst, dr.next()>>(dr.next()%48))
	}
	dst = append(dst, `","blockNumber":`...)
	dst = appendQty(dst, b.number)
	dst = append(dst, `,"transactionHash":`...)
	dst = append(dst, b.txs[i].hashHex[:]...)
	dst = append(dst, `,"transactionIndex":`...)
	dst = appendQty(dst, uint64(i))
	dst = append(dst, `,"blockHash":`...)
	dst = append(dst, b.hashHex[:]...)
	dst = append(dst, `,"blockTimestamp":`...)
	dst = appendQty(dst, b.timestamp)
	dst = append(dst, `,"logIndex":`...)
	dst = appendQty(dst, uint64(li))
	return append(dst, `,"removed":false}`...)
}
