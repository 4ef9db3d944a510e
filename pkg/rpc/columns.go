package rpc

import (
	"bytes"
	"encoding/json"
	"slices"
	"unicode/utf8"
)

// What the Raw fields keep. The decoder parses every key that has a column
// (the block's number, hashes and gas; a transaction's parties, value and
// fees; a receipt's status and gas; a log's address, topics and data) and
// checks the keys that restate the position (block hash and number,
// transaction hash and index). Raw keeps the node's object without those
// keys: every fact is stored once, and the raw JSON, which is most of the
// bytes ClickHouse receives and merges, shrinks by about half for the usual
// block (docs/performance.md). Nothing the node said is lost: an object is
// its columns plus its Raw, and keys no column knows (new fields, unknown
// transaction types' fields, logsBloom, signatures, input) are all in Raw.
//
// A key is only left out when its value is fully held by a column or is
// checked to equal one: a receipt's from, to and type must match its
// transaction's, a log's transactionIndex its receipt's position.
var (
	blockColumnKeys = newKeySet("number", "hash", "parentHash", "timestamp", "miner",
		"gasUsed", "gasLimit", "baseFeePerGas", "size",
		// The hashes are the transactions table's rows, in tx_index order.
		"transactions")
	txColumnKeys = newKeySet("hash", "blockHash", "blockNumber", "transactionIndex", "type",
		"from", "to", "value", "nonce", "gas", "gasPrice")
	receiptColumnKeys = newKeySet("transactionHash", "blockHash", "blockNumber", "transactionIndex",
		"from", "to", "type", "status", "gasUsed", "effectiveGasPrice", "contractAddress",
		// Stored one row each in the logs table.
		"logs")
	logColumnKeys = newKeySet("blockHash", "blockNumber", "transactionHash", "transactionIndex",
		"logIndex", "address", "topics", "data")
)

// keySet is a small set of JSON object keys.
type keySet map[string]struct{}

func newKeySet(keys ...string) keySet {
	s := make(keySet, len(keys))
	for _, k := range keys {
		s[k] = struct{}{}
	}
	return s
}

// has reports whether key is in the set (without allocating).
func (s keySet) has(key []byte) bool {
	_, ok := s[string(key)]
	return ok
}

// rest encodes the object minus the keys in omit (and alsoOmit, unless
// empty) as encoding/json encodes
// a map[string]json.RawMessage: keys sorted, values compacted and
// HTML-escaped. Values stay what the node sent; only the key order and
// insignificant whitespace change. (See columnKeys for why keys are left
// out.)
func (o object) rest(omit keySet, alsoOmit string) ([]byte, error) {
	var stack [64]int
	order := stack[:0]
	for i := range o.members {
		if k := o.members[i].key; !omit.has(k) && (alsoOmit == "" || string(k) != alsoOmit) {
			order = append(order, i)
		}
	}
	// Stable, so that of repeated keys the last one sent comes last.
	slices.SortStableFunc(order, func(a, b int) int { return bytes.Compare(o.members[a].key, o.members[b].key) })
	out := o.a.scratch()
	out = append(out, '{')
	first := true
	for n, i := range order {
		m := o.members[i]
		if n+1 < len(order) && bytes.Equal(o.members[order[n+1]].key, m.key) {
			continue // a later value of the same key wins
		}
		if !first {
			out = append(out, ',')
		}
		first = false
		out = appendKey(out, m.key)
		out = append(out, ':')
		var err error
		if out, err = appendCompact(out, m.val); err != nil {
			return nil, o.malformed(string(m.key), "re-encoding the value: %v", err)
		}
	}
	out = append(out, '}')
	o.a.keepScratch(out)
	return o.a.copy(out), nil
}

// appendKey appends key as a JSON string, escaped as encoding/json does.
func appendKey(out, key []byte) []byte {
	for _, c := range key {
		if c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(string(key)) // a string always encodes
			return append(out, b...)
		}
	}
	out = append(out, '"')
	out = append(out, key...)
	return append(out, '"')
}

// appendCompact appends a JSON value compacted and HTML-escaped, as
// encoding/json writes a json.RawMessage. Values with nothing to change
// (no whitespace, no <, >, & or U+2028/9) are appended as they are.
func appendCompact(out, val []byte) ([]byte, error) {
	clean := true
	for _, c := range val {
		if compactChange[c] {
			clean = false
			break
		}
	}
	if clean {
		return append(out, val...), nil
	}
	var compact, escaped bytes.Buffer
	if err := json.Compact(&compact, val); err != nil {
		return nil, err
	}
	json.HTMLEscape(&escaped, compact.Bytes())
	return append(out, escaped.Bytes()...), nil
}

// compactChange marks the bytes that compacting and HTML-escaping may
// change: whitespace, <, >, & and the first byte of U+2028 and U+2029.
var compactChange = [256]bool{' ': true, '\n': true, '\t': true, '\r': true, '<': true, '>': true, '&': true, 0xE2: true}
