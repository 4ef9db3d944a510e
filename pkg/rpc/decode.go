package rpc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/tideline-dev/tideline/pkg/chaindata"
)

// The node's answers are decoded here by hand rather than with go-ethereum's
// types.Block/Receipt: those reject transaction types the library does not
// know (L2 deposits, future EIPs), and the indexer must keep them.
//
// Decoding walks the answer's bytes (json_scan.go), handing out slices
// of the input instead of copies: each object is split once into its
// members, and fields are parsed straight from those slices. The walk is
// json_scan.go's: it checks the syntax of every value it steps over, so
// an object or array that is not JSON is a MalformedError here, whatever
// the transport checked, and a Raw made of the answer's slices is valid
// JSON. A result of a batch answer comes with the record of the walk that
// checked the whole answer (decoder.known, json_spans.go): the decoder
// then steps over the objects and arrays nested in the object it reads
// (a block's transactions, a receipt's logs, a log's topics) in one
// look-up each, since they were checked, and reads each of them once, in
// its own walk.
//
// Raw fields keep the node's objects without the keys the columns hold
// (columns.go), re-encoded as encoding/json encodes a
// map[string]json.RawMessage (keys sorted, values compacted and
// HTML-escaped, the last of repeated keys kept). TestDecoderMatchesEncodingJSON
// checks the decoder against the encoding/json based one it replaced on
// many generated blocks.

const (
	hashLen    = 32
	addressLen = 20
	anyLen     = -1
)

// decoder builds MalformedErrors that name where the answer was wrong.
type decoder struct {
	method   string
	endpoint string
	height   uint64
	// known, when set, records the objects and arrays of the answer the
	// bytes come from that a checking walk checked already
	// (json_spans.go): they are stepped over, not walked again.
	known *spans
}

func (d decoder) malformed(field, format string, args ...any) *MalformedError {
	return &MalformedError{
		Method:   d.method,
		Endpoint: d.endpoint,
		Height:   d.height,
		Field:    field,
		Reason:   fmt.Sprintf(format, args...),
	}
}

func (d decoder) object(path string, raw []byte) (object, error) {
	return d.objectInto(where{name: path}, raw, nil, nil)
}

// objectInto is object with the members stored in buf's array, so that a
// loop over many objects reuses one allocation, and strings taken from a.
func (d decoder) objectInto(path where, raw []byte, buf []member, a *arena) (object, error) {
	o := object{d: d, path: path, members: buf[:0], a: a}
	sc := scannerIn(d.known, raw)
	start := sc.ws(0)
	if start >= len(raw) || raw[start] != '{' {
		return o, d.malformed(pathOr(path.String(), "result"), "expected a JSON object, got %s", snippet(raw))
	}
	end, err := sc.object(start, func(key []byte, at int) (int, error) {
		end, err := sc.value(at)
		if err == nil {
			name := key[1 : len(key)-1] // a plain key, as nearly all are
			if !plainASCII(name) {
				name = validUTF8(memberKey(key))
			}
			o.members = append(o.members, member{key: name, val: raw[at:end:end], typ: valueType(raw[at])})
		}
		return end, err
	})
	if err == nil {
		err = sc.end(end)
	}
	if err != nil {
		return o, d.malformed(pathOr(path.String(), "result"), "invalid JSON object: %v", err)
	}
	return o, nil
}

// decodeBlock decodes an eth_getBlockByNumber(height, true) answer that is
// not null.
func (d decoder) decodeBlock(raw json.RawMessage) (*chaindata.BlockData, error) {
	// Strings and the Raw fields take most of the answer.
	a := newArena(len(raw)*3/4 + 1024)
	o, err := d.objectInto(where{}, raw, make([]member, 0, 32), a)
	if err != nil {
		return nil, err
	}
	var b chaindata.Block
	if b.Number, err = o.quantity("number"); err != nil {
		return nil, err
	}
	if b.Number != d.height {
		return nil, o.malformed("number", "block %d returned for height %d", b.Number, d.height)
	}
	if b.Hash, err = o.hexBytes("hash", hashLen); err != nil {
		return nil, err
	}
	if b.ParentHash, err = o.hexBytes("parentHash", hashLen); err != nil {
		return nil, err
	}
	if b.Timestamp, err = o.quantity("timestamp"); err != nil {
		return nil, err
	}
	if b.Miner, err = o.optHexBytes("miner", addressLen); err != nil {
		return nil, err
	}
	if b.GasUsed, err = o.quantity("gasUsed"); err != nil {
		return nil, err
	}
	if b.GasLimit, err = o.quantity("gasLimit"); err != nil {
		return nil, err
	}
	if b.BaseFeePerGas, err = o.optBigQuantity("baseFeePerGas"); err != nil {
		return nil, err
	}
	if b.Size, _, err = o.optQuantity("size"); err != nil {
		return nil, err
	}
	rawTxs, err := o.array("transactions", nil)
	if err != nil {
		return nil, err
	}
	txs := make([]chaindata.Transaction, len(rawTxs))
	buf := make([]member, 0, 32)
	for i, rt := range rawTxs {
		if buf, err = d.decodeTransaction(&b, i, rt, &txs[i], buf, a); err != nil {
			return nil, err
		}
	}
	if b.Raw, err = o.rest(blockColumnKeys, ""); err != nil {
		return nil, err
	}
	b.TxCount = uint32(len(txs))
	return &chaindata.BlockData{Block: b, Transactions: txs}, nil
}

// decodeTransaction fills tx from raw, using buf for the object's members;
// it returns buf (grown if needed) for the next transaction.
func (d decoder) decodeTransaction(b *chaindata.Block, i int, raw json.RawMessage, tx *chaindata.Transaction, buf []member, a *arena) ([]member, error) {
	path := where{list: "transactions", i: i}
	if t := bytes.TrimSpace(raw); len(t) > 0 && t[0] == '"' {
		return buf, d.malformed(path.String(), "transaction hash instead of the full object")
	}
	o, err := d.objectInto(path, raw, buf, a)
	if err != nil {
		return buf, err
	}
	buf = o.members
	tx.BlockNumber = b.Number
	tx.BlockHash = b.Hash
	tx.Index = uint32(i)
	if tx.Hash, err = o.hexBytes("hash", hashLen); err != nil {
		return buf, err
	}
	// Position fields are optional in the spec but, when present, must
	// agree with where the transaction sits: otherwise the node mixed blocks.
	if h, err := o.hexMismatch("blockHash", hashLen, false, b.Hash); err != nil {
		return buf, err
	} else if h != "" {
		return buf, o.malformed("blockHash", "%s, but the block is %s", h, b.Hash)
	}
	if n, ok, err := o.optQuantity("blockNumber"); err != nil {
		return buf, err
	} else if ok && n != b.Number {
		return buf, o.malformed("blockNumber", "%d, but the block is %d", n, b.Number)
	}
	if idx, ok, err := o.optQuantity("transactionIndex"); err != nil {
		return buf, err
	} else if ok && idx != uint64(i) {
		return buf, o.malformed("transactionIndex", "%d at position %d", idx, i)
	}
	// Legacy transactions predate the field.
	if tx.Type, _, err = o.optQuantity("type"); err != nil {
		return buf, err
	}
	if tx.From, err = o.hexBytes("from", addressLen); err != nil {
		return buf, err
	}
	if tx.To, err = o.optHexBytes("to", addressLen); err != nil {
		return buf, err
	}
	if tx.Value, err = o.bigQuantity("value"); err != nil {
		return buf, err
	}
	if tx.Nonce, err = o.quantity("nonce"); err != nil {
		return buf, err
	}
	if tx.Gas, err = o.quantity("gas"); err != nil {
		return buf, err
	}
	if tx.GasPrice, err = o.optBigQuantity("gasPrice"); err != nil {
		return buf, err
	}
	if tx.Raw, err = o.rest(txColumnKeys, ""); err != nil {
		return buf, err
	}
	return buf, nil
}

// decodeReceipts decodes an eth_getBlockReceipts answer that is not null
// and applies it to data (see applyReceipts).
func (d decoder) decodeReceipts(data *chaindata.BlockData, raw json.RawMessage) error {
	receipts, err := d.elements(raw, nil)
	if err != nil {
		return d.malformed("result", "expected an array of receipts, got %s", snippet(raw))
	}
	return d.applyReceiptsSized(data, receipts, len(raw))
}

// applyReceipts checks receipts (one per transaction, in block order) against
// data and fills the receipt fields and logs. data is left untouched when an
// error is returned.
func (d decoder) applyReceipts(data *chaindata.BlockData, receipts []json.RawMessage) error {
	size := 0
	for _, r := range receipts {
		size += len(r)
	}
	return d.applyReceiptsSized(data, receipts, size)
}

// applyReceiptsSized is applyReceipts given the receipts' total size.
func (d decoder) applyReceiptsSized(data *chaindata.BlockData, receipts []json.RawMessage, size int) error {
	if len(receipts) != len(data.Transactions) {
		return d.malformed("receipts", "%d receipts for %d transactions", len(receipts), len(data.Transactions))
	}
	// Receipts without their logs and the logs' strings take about half
	// the answer.
	a := newArena(size/2 + 1024)
	txs := make([]chaindata.Transaction, len(data.Transactions))
	copy(txs, data.Transactions)
	var logs []chaindata.Log
	var lastLogIndex uint64
	receiptBuf := make([]member, 0, 32)
	logBuf := make([]member, 0, 16)
	var rawLogs, topicBuf []json.RawMessage
	var bloom bloomer
	for i, raw := range receipts {
		path := where{list: "receipts", i: i}
		if isNull(raw) {
			return d.malformed(path.String(), "null receipt for transaction %s", txs[i].Hash)
		}
		o, err := d.objectInto(path, raw, receiptBuf, a)
		if err != nil {
			return err
		}
		receiptBuf = o.members
		tx := &txs[i]
		if h, err := o.hexMismatch("transactionHash", hashLen, true, tx.Hash); err != nil {
			return err
		} else if h != "" {
			return o.malformed("transactionHash", "%s, but transaction %d of the block is %s", h, i, tx.Hash)
		}
		if h, err := o.hexMismatch("blockHash", hashLen, true, data.Block.Hash); err != nil {
			return err
		} else if h != "" {
			return o.malformed("blockHash", "%s, but the block is %s", h, data.Block.Hash)
		}
		if n, err := o.quantity("blockNumber"); err != nil {
			return err
		} else if n != data.Block.Number {
			return o.malformed("blockNumber", "%d, but the block is %d", n, data.Block.Number)
		}
		if idx, ok, err := o.optQuantity("transactionIndex"); err != nil {
			return err
		} else if ok && idx != uint64(i) {
			return o.malformed("transactionIndex", "%d at position %d", idx, i)
		}
		// A receipt restates its transaction's parties and type; Raw
		// leaves them out, so they must agree.
		if h, err := o.hexMismatch("from", addressLen, false, tx.From); err != nil {
			return err
		} else if h != "" {
			return o.malformed("from", "%s, but transaction %s is from %s", h, tx.Hash, tx.From)
		}
		if h, err := o.hexMismatch("to", addressLen, false, tx.To); err != nil {
			return err
		} else if h != "" {
			return o.malformed("to", "%s, but transaction %s is to %q", h, tx.Hash, tx.To)
		}
		if typ, ok, err := o.optQuantity("type"); err != nil {
			return err
		} else if ok && typ != tx.Type {
			return o.malformed("type", "%d, but transaction %s has type %d", typ, tx.Hash, tx.Type)
		}
		status, ok, err := o.optQuantity("status")
		switch {
		case err != nil:
			return err
		case ok && status > 1:
			return o.malformed("status", "%d is neither 0 nor 1", status)
		case ok:
			tx.Status = uint8(status)
		case o.has("root"):
			// Pre-Byzantium receipts carry a state root instead of a status
			// and did not record failure: unknown, not success.
			tx.Status = chaindata.StatusUnknown
		default:
			return o.malformed("status", "missing (and no pre-Byzantium root)")
		}
		if tx.GasUsed, err = o.quantity("gasUsed"); err != nil {
			return err
		}
		if tx.EffectiveGasPrice, err = o.optBigQuantity("effectiveGasPrice"); err != nil {
			return err
		}
		if tx.ContractAddress, err = o.optHexBytes("contractAddress", addressLen); err != nil {
			return err
		}
		if rawLogs, err = o.array("logs", rawLogs); err != nil {
			return err
		}
		firstLog := len(logs)
		if logs == nil && len(rawLogs) > 0 {
			// Receipts usually carry alike numbers of logs: one allocation
			// for the block in the common case.
			logs = make([]chaindata.Log, 0, len(rawLogs)*len(receipts))
		}
		for j, rl := range rawLogs {
			var l chaindata.Log
			logBuf, topicBuf, err = d.decodeLog(data, tx, where{list: "receipts", i: i, sub: "logs", j: j}, rl, &l, logBuf, topicBuf, a)
			if err != nil {
				return err
			}
			// Storage keys logs by (block, logIndex): a repeat would
			// silently drop a log.
			if len(logs) > 0 && uint64(l.LogIndex) <= lastLogIndex {
				return d.malformed(where{list: "receipts", i: i, sub: "logs", j: j}.String()+".logIndex",
					"%d does not follow %d", l.LogIndex, lastLogIndex)
			}
			lastLogIndex = uint64(l.LogIndex)
			logs = append(logs, l)
		}
		tx.LogCount = uint32(len(rawLogs))
		derived, err := o.bloomOf(logs[firstLog:], &bloom)
		if err != nil {
			return err
		}
		if tx.ReceiptRaw, err = o.rest(receiptColumnKeys, derived); err != nil {
			return err
		}
	}
	data.Transactions = txs
	data.Logs = logs
	data.Block.LogCount = uint32(len(logs))
	return nil
}

// decodeLog fills l from raw, using buf for the object's members and
// topicBuf for its topics; it returns both for the next log.
func (d decoder) decodeLog(data *chaindata.BlockData, tx *chaindata.Transaction, path where, raw json.RawMessage, l *chaindata.Log,
	buf []member, topicBuf []json.RawMessage, a *arena) ([]member, []json.RawMessage, error) {
	*l = chaindata.Log{BlockNumber: data.Block.Number, BlockHash: data.Block.Hash, TxHash: tx.Hash, TxIndex: tx.Index}
	o, err := d.objectInto(path, raw, buf, a)
	if err != nil {
		return buf, topicBuf, err
	}
	buf = o.members
	if h, err := o.hexMismatch("blockHash", hashLen, true, data.Block.Hash); err != nil {
		return buf, topicBuf, err
	} else if h != "" {
		return buf, topicBuf, o.malformed("blockHash", "%s, but the block is %s", h, data.Block.Hash)
	}
	if h, err := o.hexMismatch("transactionHash", hashLen, false, tx.Hash); err != nil {
		return buf, topicBuf, err
	} else if h != "" {
		return buf, topicBuf, o.malformed("transactionHash", "%s in the receipt of %s", h, tx.Hash)
	}
	if n, ok, err := o.optQuantity("blockNumber"); err != nil {
		return buf, topicBuf, err
	} else if ok && n != data.Block.Number {
		return buf, topicBuf, o.malformed("blockNumber", "%d, but the block is %d", n, data.Block.Number)
	}
	if n, ok, err := o.optQuantity("transactionIndex"); err != nil {
		return buf, topicBuf, err
	} else if ok && n != uint64(tx.Index) {
		return buf, topicBuf, o.malformed("transactionIndex", "%d in the receipt of transaction %d", n, tx.Index)
	}
	idx, err := o.quantity("logIndex")
	if err != nil {
		return buf, topicBuf, err
	}
	if idx > 1<<32-1 {
		return buf, topicBuf, o.malformed("logIndex", "%d out of range", idx)
	}
	l.LogIndex = uint32(idx)
	if l.Address, err = o.hexBytes("address", addressLen); err != nil {
		return buf, topicBuf, err
	}
	topics, err := o.array("topics", topicBuf)
	if err != nil {
		return buf, topicBuf, err
	}
	topicBuf = topics
	l.Topics = a.strings(len(topics))
	for k, rt := range topics {
		// A null topic reads as "" (and fails below), as encoding/json
		// decodes null into a string.
		s := []byte{}
		switch {
		case isNull(rt):
		case rt[0] == '"':
			if s, err = unquote(rt); err == nil {
				break
			}
			fallthrough
		default:
			return buf, topicBuf, o.malformed("topics["+strconv.Itoa(k)+"]", "expected a string, got %s", snippet(rt))
		}
		if l.Topics[k], err = a.hex(s, hashLen); err != nil {
			return buf, topicBuf, o.malformed("topics["+strconv.Itoa(k)+"]", "%v", err)
		}
	}
	if l.Data, err = o.hexBytes("data", anyLen); err != nil {
		return buf, topicBuf, err
	}
	if l.Raw, err = o.rest(logColumnKeys, ""); err != nil {
		return buf, topicBuf, err
	}
	return buf, topicBuf, nil
}
