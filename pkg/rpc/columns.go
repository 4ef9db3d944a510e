package rpc

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
