package simchain

// Substreams of a transaction's seed, one per rendered byte string, so each
// renders the same wherever it appears.
const (
	subInput uint64 = iota + 1
	subSig
	subSource
	subBlobs
	subAccess
)

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
	dst = rd.appendInputHex(dst, t)
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

// appendInputHex writes the transaction's input as hex digits (no quotes,
// no 0x): its call trace's top-level frame repeats it.
func (rd *renderer) appendInputHex(dst []byte, t *txn) []byte {
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
	return dst
}
