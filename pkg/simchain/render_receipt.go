package simchain

import "strings"

// zeroBloom is the logs bloom of a receipt without logs.
var zeroBloom = `"0x` + strings.Repeat("0", 512) + `"`

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
	dst = appendLogData(dst, l)
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
