package rpc

// This file keeps the encoding/json based decoder that decode.go replaced,
// renamed, as the reference TestDecoderMatchesEncodingJSON compares the new
// decoder with. It is test code only; do not call it from the package.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/tideline-dev/tideline/pkg/chaindata"
)

// oldDecoder builds MalformedErrors that name where the answer was wrong.
type oldDecoder struct {
	method   string
	endpoint string
	height   uint64
}

func (d oldDecoder) malformed(field, format string, args ...any) *MalformedError {
	return &MalformedError{
		Method:   d.method,
		Endpoint: d.endpoint,
		Height:   d.height,
		Field:    field,
		Reason:   fmt.Sprintf(format, args...),
	}
}

// oldObject is one JSON oldObject of an answer, with the path that names it in
// errors ("" for the top level, "transactions[3]", "receipts[0].logs[1]").
type oldObject struct {
	d    oldDecoder
	path string
	m    map[string]json.RawMessage
}

func (d oldDecoder) oldObject(path string, raw json.RawMessage) (oldObject, error) {
	o := oldObject{d: d, path: path}
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return o, d.malformed(oldPathOr(path, "result"), "expected a JSON object, got %s", oldSnippet(raw))
	}
	if err := json.Unmarshal(trimmed, &o.m); err != nil {
		return o, d.malformed(oldPathOr(path, "result"), "invalid JSON object: %v", err)
	}
	return o, nil
}

func oldPathOr(path, def string) string {
	if path == "" {
		return def
	}
	return path
}

func (o oldObject) field(key string) string {
	if o.path == "" {
		return key
	}
	return o.path + "." + key
}

func (o oldObject) malformed(key, format string, args ...any) *MalformedError {
	return o.d.malformed(o.field(key), format, args...)
}

// str returns the field as a JSON string; ok is false when it is absent or
// null, which optional fields treat alike.
func (o oldObject) str(key string) (s string, ok bool, err error) {
	raw, present := o.m[key]
	if !present || oldIsNull(raw) {
		return "", false, nil
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false, o.malformed(key, "expected a string, got %s", oldSnippet(raw))
	}
	return s, true, nil
}

func (o oldObject) requiredStr(key string) (string, error) {
	s, ok, err := o.str(key)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", o.malformed(key, "missing")
	}
	return s, nil
}

func (o oldObject) quantity(key string) (uint64, error) {
	s, err := o.requiredStr(key)
	if err != nil {
		return 0, err
	}
	v, err := oldParseQuantity(s)
	if err != nil {
		return 0, o.malformed(key, "%v", err)
	}
	return v, nil
}

func (o oldObject) optQuantity(key string) (v uint64, ok bool, err error) {
	s, ok, err := o.str(key)
	if err != nil || !ok {
		return 0, false, err
	}
	v, err = oldParseQuantity(s)
	if err != nil {
		return 0, false, o.malformed(key, "%v", err)
	}
	return v, true, nil
}

// bigQuantity returns a wei amount as a base-10 string.
func (o oldObject) bigQuantity(key string) (string, error) {
	s, err := o.requiredStr(key)
	if err != nil {
		return "", err
	}
	v, err := oldParseBig(s)
	if err != nil {
		return "", o.malformed(key, "%v", err)
	}
	return v, nil
}

// optBigQuantity returns "" when the field is absent or null.
func (o oldObject) optBigQuantity(key string) (string, error) {
	s, ok, err := o.str(key)
	if err != nil || !ok {
		return "", err
	}
	v, err := oldParseBig(s)
	if err != nil {
		return "", o.malformed(key, "%v", err)
	}
	return v, nil
}

func (o oldObject) hexBytes(key string, size int) (string, error) {
	s, err := o.requiredStr(key)
	if err != nil {
		return "", err
	}
	v, err := oldParseHexBytes(s, size)
	if err != nil {
		return "", o.malformed(key, "%v", err)
	}
	return v, nil
}

// optHexBytes returns "" when the field is absent or null (e.g. "to" of a
// contract creation).
func (o oldObject) optHexBytes(key string, size int) (string, error) {
	s, ok, err := o.str(key)
	if err != nil || !ok {
		return "", err
	}
	v, err := oldParseHexBytes(s, size)
	if err != nil {
		return "", o.malformed(key, "%v", err)
	}
	return v, nil
}

func (o oldObject) array(key string) ([]json.RawMessage, error) {
	raw, present := o.m[key]
	if !present || oldIsNull(raw) {
		return nil, o.malformed(key, "missing")
	}
	var a []json.RawMessage
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, o.malformed(key, "expected an array, got %s", oldSnippet(raw))
	}
	return a, nil
}

// rest re-encodes the oldObject minus the keys in omit (columns.go) and
// alsoOmit. Values
// stay what the node sent; only the key order changes (sorted).
func (o oldObject) rest(omit keySet, alsoOmit string) ([]byte, error) {
	m := make(map[string]json.RawMessage, len(o.m))
	for k, v := range o.m {
		if _, drop := omit[k]; !drop && k != alsoOmit {
			m[k] = v
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, o.malformed("", "re-encoding the object: %v", err)
	}
	return b, nil
}

func (o oldObject) has(key string) bool {
	raw, ok := o.m[key]
	return ok && !oldIsNull(raw)
}

func oldIsNull(raw json.RawMessage) bool {
	return string(bytes.TrimSpace(raw)) == "null"
}

// oldSnippet shows a short prefix of a bad value in an error.
func oldSnippet(raw []byte) string {
	const max = 64
	s := string(bytes.TrimSpace(raw))
	if len(s) > max {
		return strconv.Quote(s[:max]) + "..."
	}
	return strconv.Quote(s)
}

// oldParseQuantity parses a JSON-RPC hex quantity. The 0x prefix and hex digits
// are required; leading zeros, which the spec forbids, are accepted because
// some nodes send them and the value is still unambiguous.
func oldParseQuantity(s string) (uint64, error) {
	digits, err := oldHexDigits(s)
	if err != nil {
		return 0, err
	}
	digits = strings.TrimLeft(digits, "0")
	if digits == "" {
		return 0, nil
	}
	if len(digits) > 16 {
		return 0, fmt.Errorf("quantity %s overflows 64 bits", oldClip(s))
	}
	return strconv.ParseUint(digits, 16, 64)
}

// oldParseBig parses a hex quantity of any size into a base-10 string.
func oldParseBig(s string) (string, error) {
	digits, err := oldHexDigits(s)
	if err != nil {
		return "", err
	}
	v, ok := new(big.Int).SetString(digits, 16)
	if !ok {
		return "", fmt.Errorf("bad quantity %s", oldClip(s))
	}
	return v.String(), nil
}

func oldHexDigits(s string) (string, error) {
	if !strings.HasPrefix(s, "0x") {
		return "", fmt.Errorf("quantity %s lacks the 0x prefix", oldClip(s))
	}
	digits := s[2:]
	if digits == "" {
		return "", fmt.Errorf("quantity %q has no digits", s)
	}
	if !oldIsHex(digits) {
		return "", fmt.Errorf("quantity %s has non-hex characters", oldClip(s))
	}
	return digits, nil
}

// oldParseHexBytes checks 0x-prefixed binary data of size bytes (anyLen: any
// whole number of bytes) and returns it in lower case.
func oldParseHexBytes(s string, size int) (string, error) {
	if !strings.HasPrefix(s, "0x") {
		return "", fmt.Errorf("value %s lacks the 0x prefix", oldClip(s))
	}
	digits := s[2:]
	if !oldIsHex(digits) {
		return "", fmt.Errorf("value %s has non-hex characters", oldClip(s))
	}
	if len(digits)%2 != 0 {
		return "", fmt.Errorf("value %s has an odd number of hex digits", oldClip(s))
	}
	if size != anyLen && len(digits) != 2*size {
		return "", fmt.Errorf("value %s is %d bytes, want %d", oldClip(s), len(digits)/2, size)
	}
	return "0x" + strings.ToLower(digits), nil
}

func oldIsHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

func oldClip(s string) string {
	if len(s) > 80 {
		return strconv.Quote(s[:80]) + "..."
	}
	return strconv.Quote(s)
}

// decodeBlock decodes an eth_getBlockByNumber(height, true) answer that is
// not null.
func (d oldDecoder) decodeBlock(raw json.RawMessage) (*chaindata.BlockData, error) {
	o, err := d.oldObject("", raw)
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
	rawTxs, err := o.array("transactions")
	if err != nil {
		return nil, err
	}
	txs := make([]chaindata.Transaction, len(rawTxs))
	for i, rt := range rawTxs {
		if err := d.decodeTransaction(&b, i, rt, &txs[i]); err != nil {
			return nil, err
		}
	}
	if b.Raw, err = o.rest(blockColumnKeys, ""); err != nil {
		return nil, err
	}
	b.TxCount = uint32(len(txs))
	return &chaindata.BlockData{Block: b, Transactions: txs}, nil
}

func (d oldDecoder) decodeTransaction(b *chaindata.Block, i int, raw json.RawMessage, tx *chaindata.Transaction) error {
	path := fmt.Sprintf("transactions[%d]", i)
	if t := bytes.TrimSpace(raw); len(t) > 0 && t[0] == '"' {
		return d.malformed(path, "transaction hash instead of the full oldObject")
	}
	o, err := d.oldObject(path, raw)
	if err != nil {
		return err
	}
	tx.BlockNumber = b.Number
	tx.BlockHash = b.Hash
	tx.Index = uint32(i)
	if tx.Hash, err = o.hexBytes("hash", hashLen); err != nil {
		return err
	}
	// Position fields are optional in the spec but, when present, must
	// agree with where the transaction sits: otherwise the node mixed blocks.
	if h, err := o.optHexBytes("blockHash", hashLen); err != nil {
		return err
	} else if h != "" && h != b.Hash {
		return o.malformed("blockHash", "%s, but the block is %s", h, b.Hash)
	}
	if n, ok, err := o.optQuantity("blockNumber"); err != nil {
		return err
	} else if ok && n != b.Number {
		return o.malformed("blockNumber", "%d, but the block is %d", n, b.Number)
	}
	if idx, ok, err := o.optQuantity("transactionIndex"); err != nil {
		return err
	} else if ok && idx != uint64(i) {
		return o.malformed("transactionIndex", "%d at position %d", idx, i)
	}
	// Legacy transactions predate the field.
	if tx.Type, _, err = o.optQuantity("type"); err != nil {
		return err
	}
	if tx.From, err = o.hexBytes("from", addressLen); err != nil {
		return err
	}
	if tx.To, err = o.optHexBytes("to", addressLen); err != nil {
		return err
	}
	if tx.Value, err = o.bigQuantity("value"); err != nil {
		return err
	}
	if tx.Nonce, err = o.quantity("nonce"); err != nil {
		return err
	}
	if tx.Gas, err = o.quantity("gas"); err != nil {
		return err
	}
	if tx.GasPrice, err = o.optBigQuantity("gasPrice"); err != nil {
		return err
	}
	if tx.Raw, err = o.rest(txColumnKeys, ""); err != nil {
		return err
	}
	return nil
}

// applyReceipts checks receipts (one per transaction, in block order) against
// data and fills the receipt fields and logs. data is left untouched when an
// error is returned.
func (d oldDecoder) applyReceipts(data *chaindata.BlockData, receipts []json.RawMessage) error {
	if len(receipts) != len(data.Transactions) {
		return d.malformed("receipts", "%d receipts for %d transactions", len(receipts), len(data.Transactions))
	}
	txs := make([]chaindata.Transaction, len(data.Transactions))
	copy(txs, data.Transactions)
	var logs []chaindata.Log
	var lastLogIndex uint64
	for i, raw := range receipts {
		path := fmt.Sprintf("receipts[%d]", i)
		if oldIsNull(raw) {
			return d.malformed(path, "null receipt for transaction %s", txs[i].Hash)
		}
		o, err := d.oldObject(path, raw)
		if err != nil {
			return err
		}
		tx := &txs[i]
		if h, err := o.hexBytes("transactionHash", hashLen); err != nil {
			return err
		} else if h != tx.Hash {
			return o.malformed("transactionHash", "%s, but transaction %d of the block is %s", h, i, tx.Hash)
		}
		if h, err := o.hexBytes("blockHash", hashLen); err != nil {
			return err
		} else if h != data.Block.Hash {
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
		if h, err := o.optHexBytes("from", addressLen); err != nil {
			return err
		} else if h != "" && h != tx.From {
			return o.malformed("from", "%s, but transaction %s is from %s", h, tx.Hash, tx.From)
		}
		if h, err := o.optHexBytes("to", addressLen); err != nil {
			return err
		} else if h != "" && h != tx.To {
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
			// and did not record failure: unknown (issue 19 changed this
			// from 1, here as in decode.go).
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
		rawLogs, err := o.array("logs")
		if err != nil {
			return err
		}
		firstLog := len(logs)
		for j, rl := range rawLogs {
			l, err := d.decodeLog(data, tx, fmt.Sprintf("%s.logs[%d]", path, j), rl)
			if err != nil {
				return err
			}
			// Storage keys logs by (block, logIndex): a repeat would
			// silently drop a log.
			if len(logs) > 0 && uint64(l.LogIndex) <= lastLogIndex {
				return d.malformed(fmt.Sprintf("%s.logs[%d].logIndex", path, j),
					"%d does not follow %d", l.LogIndex, lastLogIndex)
			}
			lastLogIndex = uint64(l.LogIndex)
			logs = append(logs, l)
		}
		tx.LogCount = uint32(len(rawLogs))
		bloom, err := o.optHexBytes("logsBloom", types.BloomByteLength)
		if err != nil {
			return err
		}
		derived := ""
		if bloom != "" && bloom == oldBloom(logs[firstLog:]) {
			derived = "logsBloom"
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

func (d oldDecoder) decodeLog(data *chaindata.BlockData, tx *chaindata.Transaction, path string, raw json.RawMessage) (chaindata.Log, error) {
	l := chaindata.Log{BlockNumber: data.Block.Number, BlockHash: data.Block.Hash, TxHash: tx.Hash, TxIndex: tx.Index}
	o, err := d.oldObject(path, raw)
	if err != nil {
		return l, err
	}
	if h, err := o.hexBytes("blockHash", hashLen); err != nil {
		return l, err
	} else if h != data.Block.Hash {
		return l, o.malformed("blockHash", "%s, but the block is %s", h, data.Block.Hash)
	}
	if h, err := o.optHexBytes("transactionHash", hashLen); err != nil {
		return l, err
	} else if h != "" && h != tx.Hash {
		return l, o.malformed("transactionHash", "%s in the receipt of %s", h, tx.Hash)
	}
	if n, ok, err := o.optQuantity("blockNumber"); err != nil {
		return l, err
	} else if ok && n != data.Block.Number {
		return l, o.malformed("blockNumber", "%d, but the block is %d", n, data.Block.Number)
	}
	if n, ok, err := o.optQuantity("transactionIndex"); err != nil {
		return l, err
	} else if ok && n != uint64(tx.Index) {
		return l, o.malformed("transactionIndex", "%d in the receipt of transaction %d", n, tx.Index)
	}
	idx, err := o.quantity("logIndex")
	if err != nil {
		return l, err
	}
	if idx > 1<<32-1 {
		return l, o.malformed("logIndex", "%d out of range", idx)
	}
	l.LogIndex = uint32(idx)
	if l.Address, err = o.hexBytes("address", addressLen); err != nil {
		return l, err
	}
	topics, err := o.array("topics")
	if err != nil {
		return l, err
	}
	l.Topics = make([]string, len(topics))
	for k, rt := range topics {
		var s string
		if err := json.Unmarshal(rt, &s); err != nil {
			return l, o.malformed(fmt.Sprintf("topics[%d]", k), "expected a string, got %s", oldSnippet(rt))
		}
		if l.Topics[k], err = oldParseHexBytes(s, hashLen); err != nil {
			return l, o.malformed(fmt.Sprintf("topics[%d]", k), "%v", err)
		}
	}
	if l.Data, err = o.hexBytes("data", anyLen); err != nil {
		return l, err
	}
	if l.Raw, err = o.rest(logColumnKeys, ""); err != nil {
		return l, err
	}
	return l, nil
}

// oldBloom is go-ethereum's bloom of logs, as 0x-prefixed hex.
func oldBloom(logs []chaindata.Log) string {
	var b types.Bloom
	for _, l := range logs {
		b.Add(common.HexToAddress(l.Address).Bytes())
		for _, t := range l.Topics {
			b.Add(common.HexToHash(t).Bytes())
		}
	}
	return hexutil.Encode(b.Bytes())
}
