package simchain

// The answers are rendered in three files: the block object (here),
// transactions (render_tx.go), receipts and logs (render_receipt.go), with
// the JSON primitives in json.go.

const (
	emptyRoot      = "0x56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421"
	emptyUncleHash = "0x1dcc4de8dec75d7aab85b567b6ccd41ad312451b948a7413f0a142fd40d49347"
	emptyRequests  = "0xe3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	extraData      = "0x73696d636861696e" // "simchain"
)

// renderer writes the answers of one view of the chain. A corrupt answer
// is valid JSON that breaks a check of the caller's decoder.
type renderer struct {
	v       view
	p       *pools
	chainID uint64
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
