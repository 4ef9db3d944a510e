package storage

import (
	"fmt"
	"strings"
)

// The query API's statements (read.go runs them). They follow the read
// rules of the README: the newest version per key, then `is_canonical = 1`
// in WHERE, never PREWHERE (18.16 would filter before the versions collapse
// and show an orphaned row). Every statement is bounded by the chain and a
// height range or a short list of positions, so the primary key keeps each
// read to a few granules per partition.
//
// The newest version per key is taken two ways. Reads of keys, or of a
// range of keys filtered on key columns only, use newestCanonical:
// `ORDER BY <key>, version DESC LIMIT 1 BY <key>` over the rows the key
// conditions select. On 18.16, FINAL on a table of several parts made a
// point read 2-4 times slower than that (docs/performance.md, "Query API
// under load"). Reads filtered on other columns (logs by address and
// topics) keep FINAL: such a filter must see only the newest version, so it
// cannot go inside the subquery, and without it the subquery would read the
// whole height range.
//
// Look-up tables (tx_by_hash, block_by_hash, block_by_time, address_txs,
// address_logs) only say where a row is; the row itself is read from the
// main table at that position, where its own version and tombstone decide.

// Columns read into chaindata.Block, chaindata.Transaction and chaindata.Log, in the
// order of the Scan calls in read.go. Timestamps are read as numbers:
// scanning a DateTime into time.Time would depend on the server's zone.
const (
	blockReadColumns = "number, hash, parent_hash, toUInt32(timestamp), miner, gas_used, gas_limit," +
		" base_fee_per_gas, size, tx_count, log_count, raw"
	txReadColumns = "block_number, block_hash, tx_index, hash, type, from_address, to_address, value, nonce, gas," +
		" gas_price, status, gas_used, effective_gas_price, contract_address, log_count, raw, receipt_raw"
	logReadColumns = "block_number, block_hash, tx_hash, tx_index, log_index, address," +
		" topic0, topic1, topic2, topic3, topic_count, data, raw"
)

// txColumns is what a read of transactions names: outer for the
// statement's result, in scanTransaction's order; inner for the subquery
// that picks the newest version. A narrower set reads a zero value in place
// of each column left out (leaveOut), so the scan stays scanTransaction.
// Positions read by a listing or a batch are scattered, and a read of
// scattered positions costs a random read of every column it names: on
// the 100,000-height bench index with the page cache dropped, 100
// positions took 244–1,027 ms with 17 columns and 19–49 ms with three
// (docs/performance.md).
type txColumns struct{ outer, inner string }

var (
	txAllColumns = txColumns{txReadColumns, txReadColumns}
	// txReceiptColumns: what eth_getTransactionReceipt answers with, not the
	// transaction's own JSON, value, nonce, gas limit, gas price or log count.
	txReceiptColumns = leaveOut(txReadColumns, map[string]string{
		"value": "''", "nonce": "toUInt64(0)", "gas": "toUInt64(0)", "gas_price": "''", "log_count": "toUInt32(0)", "raw": "''",
	})
	// txTransferColumns: what a token transfer listing (Etherscan's
	// tokentx, tokennfttx, token1155tx) takes from the transaction: its
	// nonce, gas, prices, gas used, method id (raw) and cumulative gas
	// (receipt_raw); the transfer itself has the hashes and addresses.
	txTransferColumns = leaveOut(txReadColumns, map[string]string{
		"block_hash": "''", "hash": "''", "type": "toUInt64(0)", "from_address": "''", "to_address": "''", "value": "''",
		"status": "toUInt8(0)", "contract_address": "''", "log_count": "toUInt32(0)",
	})
)

// leaveOut is cols (a column list) for newestCanonical with the columns
// of left read as their zero values: outer names every column, each of
// left as its zero value; inner only the others.
func leaveOut(cols string, left map[string]string) txColumns {
	var o, in []string
	for _, c := range strings.Split(cols, ", ") {
		if zero, ok := left[c]; ok {
			o = append(o, zero+" AS "+c)
			continue
		}
		o, in = append(o, c), append(in, c)
	}
	return txColumns{strings.Join(o, ", "), strings.Join(in, ", ")}
}

// blockPlainColumns are the columns blockReadColumns is computed from, for
// the subquery of newestCanonical (txReadColumns are plain already).
const blockPlainColumns = "number, hash, parent_hash, timestamp, miner, gas_used, gas_limit," +
	" base_fee_per_gas, size, tx_count, log_count, raw"

// newestCanonical reads, of the rows of table that where selects, the
// newest version of each key (key is the part of the table's sorting key
// that where does not fix: after chain_id, and after the hash or address
// of a look-up table), and of those only canonical rows. where
// must test key columns only: a test of another column inside would pick
// among versions instead of looking at the newest. inner lists the plain
// columns outer is computed from. Ties of version (one write's rows) do not
// occur within a key: WriteBlocks writes a key once per version.
func newestCanonical(outer, inner, table, where, key string) string {
	return "SELECT " + outer + " FROM (SELECT " + inner + ", is_canonical FROM " + table + " WHERE " + where +
		" ORDER BY " + key + ", version DESC LIMIT 1 BY " + key + ") WHERE is_canonical = 1"
}

func appendStrings(args []any, ss []string) []any {
	for _, s := range ss {
		args = append(args, s)
	}
	return args
}

// placeholders returns "?, ?, …" for n arguments.
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

// readStateQuery reads the chain_state keys the API needs in one round
// trip, the newest save of each.
type readStateQuery struct {
	chainID string
}

func (q readStateQuery) toSQL() (string, []any) {
	return "SELECT key, argMax(value, version) FROM chain_state WHERE chain_id = ? AND key IN (?, ?, ?) GROUP BY key",
		[]any{q.chainID, StateWatermark, StateAggregatorHeight, StatePrunedHeight}
}

// blocksRangeQuery reads the canonical blocks of a height range, in order.
type blocksRangeQuery struct {
	chainID  string
	from, to uint64
}

func (q blocksRangeQuery) toSQL() (string, []any) {
	return newestCanonical(blockReadColumns, blockPlainColumns, "blocks", "chain_id = ? AND number BETWEEN ? AND ?", "number") +
			" ORDER BY number",
		[]any{q.chainID, q.from, q.to}
}

// blocksAtQuery reads the canonical blocks of a few heights.
type blocksAtQuery struct {
	chainID string
	heights []uint64
}

func (q blocksAtQuery) toSQL() (string, []any) {
	args := make([]any, 0, 1+len(q.heights))
	args = append(args, q.chainID)
	for _, h := range q.heights {
		args = append(args, h)
	}
	return newestCanonical(blockReadColumns, blockPlainColumns, "blocks",
		"chain_id = ? AND number IN ("+placeholders(len(q.heights))+")", "number") + " ORDER BY number", args
}

// blockTimesQuery reads the hash and time of a few heights' canonical
// blocks: narrow columns only, so not the blocks' raw JSON (most of a
// granule's bytes).
type blockTimesQuery struct {
	chainID string
	heights []uint64
}

func (q blockTimesQuery) toSQL() (string, []any) {
	args := make([]any, 0, 1+len(q.heights))
	args = append(args, q.chainID)
	for _, h := range q.heights {
		args = append(args, h)
	}
	return newestCanonical("number, hash, toUInt32(timestamp)", "number, hash, timestamp", "blocks",
		"chain_id = ? AND number IN ("+placeholders(len(q.heights))+")", "number"), args
}

// blockHeightsByHashQuery finds the canonical heights of a block hash in
// block_by_hash (normally one; an orphaned block's row is a tombstone).
type blockHeightsByHashQuery struct {
	chainID  string
	hash     string
	min, max uint64
}

func (q blockHeightsByHashQuery) toSQL() (string, []any) {
	return newestCanonical("number", "number", "block_by_hash",
			"chain_id = ? AND hash = ? AND number BETWEEN ? AND ?", "number") + " ORDER BY number LIMIT 16",
		[]any{q.chainID, q.hash, q.min, q.max}
}

// heightAtTimeQuery finds in block_by_time the first block at or after a
// time (last = false) or the last at or before it (last = true), among
// the times [lo, hi] and the heights [min, max]. The time window keeps the
// read to its key range; BlockAtTime widens it step by step.
type heightAtTimeQuery struct {
	chainID  string
	lo, hi   uint64 // unix seconds
	min, max uint64 // heights
	last     bool
}

func (q heightAtTimeQuery) toSQL() (string, []any) {
	order := "timestamp, number"
	if q.last {
		order = "timestamp DESC, number DESC"
	}
	return newestCanonical("number, toUInt32(timestamp)", "number, timestamp", "block_by_time",
			"chain_id = ? AND timestamp BETWEEN toDateTime(?) AND toDateTime(?) AND number BETWEEN ? AND ?",
			"timestamp, number") + " ORDER BY " + order + " LIMIT 1",
		[]any{q.chainID, q.lo, q.hi, q.min, q.max}
}

// txPositionsByHashQuery finds the canonical positions of a transaction
// hash in tx_by_hash, first by height (a hash may repeat after a reorg or
// a replay on a fork).
type txPositionsByHashQuery struct {
	chainID  string
	hash     string
	min, max uint64
}

func (q txPositionsByHashQuery) toSQL() (string, []any) {
	return newestCanonical("block_number, tx_index", "block_number, tx_index", "tx_by_hash",
			"chain_id = ? AND hash = ? AND block_number BETWEEN ? AND ?", "block_number, tx_index") +
			" ORDER BY block_number, tx_index LIMIT 16",
		[]any{q.chainID, q.hash, q.min, q.max}
}

// positionsIn is the condition "(block_number, idx) is one of ps": the
// IN on block_number alone lets the primary key skip to the heights; the
// tuple IN picks the rows. Both are plain IN lists, which 18.16 has.
func positionsIn(idx string, ps []Position) (string, []any) {
	return keysIn(idx, ps, func(p Position) (uint64, []any) { return p.Block, []any{p.Index} })
}

// keysIn is positionsIn for any key that starts with block_number: rest
// names the key's other columns, and key gives a position's height and
// the values of those columns, in their order.
func keysIn[P any](rest string, ps []P, key func(P) (uint64, []any)) (string, []any) {
	args := make([]any, 0, 3*len(ps))
	heights := make([]string, 0, len(ps))
	seen := map[uint64]bool{}
	var values [][]any
	for _, p := range ps {
		block, vs := key(p)
		values = append(values, append([]any{block}, vs...))
		if !seen[block] {
			seen[block] = true
			heights = append(heights, "?")
			args = append(args, block)
		}
	}
	tuples := make([]string, len(values))
	for i, vs := range values {
		tuples[i] = "(" + strings.TrimSuffix(strings.Repeat("?, ", len(vs)), ", ") + ")"
		args = append(args, vs...)
	}
	return "block_number IN (" + strings.Join(heights, ", ") + ") AND (block_number, " + rest + ") IN (" +
		strings.Join(tuples, ", ") + ")", args
}

// transactionsAtQuery reads the canonical transactions at positions,
// the columns cols names.
type transactionsAtQuery struct {
	chainID   string
	positions []Position
	cols      txColumns
}

func (q transactionsAtQuery) toSQL() (string, []any) {
	cond, args := positionsIn("tx_index", q.positions)
	return newestCanonical(q.cols.outer, q.cols.inner, "transactions", "chain_id = ? AND "+cond, "block_number, tx_index") +
		" ORDER BY block_number, tx_index", append([]any{q.chainID}, args...)
}

// txFeesQuery reads what a transaction paid, at positions: narrow
// columns, not the raw JSON.
type txFeesQuery struct {
	chainID   string
	positions []Position
}

func (q txFeesQuery) toSQL() (string, []any) {
	cond, args := positionsIn("tx_index", q.positions)
	cols := "block_number, tx_index, hash, gas_price, effective_gas_price, gas_used"
	return newestCanonical(cols, cols, "transactions", "chain_id = ? AND "+cond, "block_number, tx_index"),
		append([]any{q.chainID}, args...)
}

// blockTransactionsQuery reads a block's canonical transactions from a
// position on, in order.
type blockTransactionsQuery struct {
	chainID string
	height  uint64
	from    uint32 // first tx_index
	limit   int
}

func (q blockTransactionsQuery) toSQL() (string, []any) {
	return newestCanonical(txReadColumns, txReadColumns, "transactions",
			"chain_id = ? AND block_number = ? AND tx_index >= ?", "block_number, tx_index") + " ORDER BY tx_index LIMIT ?",
		[]any{q.chainID, q.height, q.from, q.limit}
}

// addressTxPositionsQuery lists an address's transaction positions in
// address_txs within a height range, newest first (desc) or oldest first,
// strictly beyond a cursor position when one is given, skipping offset
// rows. No tuple comparison: 18.16 lacks it, so the cursor is spelled out.
type addressTxPositionsQuery struct {
	chainID  string
	address  string
	from, to uint64
	desc     bool
	after    *Position
	limit    int
	offset   int
}

func (q addressTxPositionsQuery) toSQL() (string, []any) {
	args := []any{q.chainID, q.address, q.from, q.to}
	where := "chain_id = ? AND address = ? AND block_number BETWEEN ? AND ?"
	if q.after != nil {
		op := ">"
		if q.desc {
			op = "<"
		}
		where += fmt.Sprintf(" AND (block_number %s ? OR (block_number = ? AND tx_index %s ?))", op, op)
		args = append(args, q.after.Block, q.after.Block, q.after.Index)
	}
	order := "block_number, tx_index"
	if q.desc {
		order = "block_number DESC, tx_index DESC"
	}
	sql := newestCanonical("block_number, tx_index", "block_number, tx_index", "address_txs", where, "block_number, tx_index") +
		" ORDER BY " + order + " LIMIT ?"
	args = append(args, q.limit)
	if q.offset > 0 {
		sql += " OFFSET ?"
		args = append(args, q.offset)
	}
	return sql, args
}

// aggregatesAtQuery reads the newest aggregate row of a few heights
// (argMax: exact before and after merges, and cheaper than FINAL for two
// keys).
type aggregatesAtQuery struct {
	chainID string
	heights []uint64
}

func (q aggregatesAtQuery) toSQL() (string, []any) {
	args := make([]any, 0, 1+len(q.heights))
	args = append(args, q.chainID)
	for _, h := range q.heights {
		args = append(args, h)
	}
	return "SELECT number, argMax(block_hash, version), argMax(txs, version), argMax(logs, version)," +
		" argMax(bytes, version) FROM aggregates WHERE chain_id = ? AND number IN (" + placeholders(len(q.heights)) +
		") GROUP BY number", args
}
