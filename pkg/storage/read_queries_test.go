package storage

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The API's read statements as text: what is sent, that every argument
// has its placeholder, and that the read rules hold (FINAL or argMax,
// is_canonical in WHERE, no PREWHERE beside FINAL).
func TestReadStatementsToSQL(t *testing.T) {
	after := &Position{Block: 7, Index: 3}
	// The heights the look-ups name, read twice by a filtered logs query:
	// for the rows, and for the newest version of each position.
	const (
		rangeHeights   = "chain_id = ? AND block_number BETWEEN ? AND ?"
		addressLogs    = "SELECT block_number FROM (SELECT block_number, log_index, is_canonical FROM address_logs"
		newestAddress  = " AND block_number BETWEEN ? AND ? ORDER BY block_number, log_index, version DESC LIMIT 1 BY block_number, log_index) WHERE is_canonical = 1)"
		topicHeights   = " AND block_number IN (SELECT block_number FROM topic_heights WHERE chain_id = ? AND topic_key IN "
		addressHeights = rangeHeights + " AND block_number IN (" + addressLogs + " WHERE chain_id = ? AND address IN (?)" + newestAddress +
			" AND (block_number > ? OR (block_number = ? AND log_index > ?))"
		twoTopicHeights = rangeHeights + topicHeights + "(?) AND block_number BETWEEN ? AND ?)" +
			topicHeights + "(?) AND block_number BETWEEN ? AND ?)"
		addressesTopicHeights = rangeHeights + " AND block_number IN (" + addressLogs + " WHERE chain_id = ? AND address IN (?, ?)" + newestAddress +
			topicHeights + "(?, ?) AND block_number BETWEEN ? AND ?)"
	)
	cases := []struct {
		name string
		stmt statement
		sql  string
		args []any
	}{
		{
			name: "state keys",
			stmt: readStateQuery{"1"},
			sql:  "SELECT key, argMax(value, version) FROM chain_state WHERE chain_id = ? AND key IN (?, ?, ?) GROUP BY key",
			args: []any{"1", StateWatermark, StateAggregatorHeight, StatePrunedHeight},
		},
		{
			name: "blocks of a range",
			stmt: blocksRangeQuery{"1", 10, 19},
			sql: "SELECT " + blockReadColumns + " FROM (SELECT " + blockPlainColumns + ", is_canonical FROM blocks" +
				" WHERE chain_id = ? AND number BETWEEN ? AND ? ORDER BY number, version DESC LIMIT 1 BY number)" +
				" WHERE is_canonical = 1 ORDER BY number",
			args: []any{"1", uint64(10), uint64(19)},
		},
		{
			name: "blocks at heights",
			stmt: blocksAtQuery{"1", []uint64{5, 9}},
			sql: "SELECT " + blockReadColumns + " FROM (SELECT " + blockPlainColumns + ", is_canonical FROM blocks" +
				" WHERE chain_id = ? AND number IN (?, ?) ORDER BY number, version DESC LIMIT 1 BY number)" +
				" WHERE is_canonical = 1 ORDER BY number",
			args: []any{"1", uint64(5), uint64(9)},
		},
		{
			name: "block times, no raw",
			stmt: blockTimesQuery{"1", []uint64{5, 9}},
			sql: "SELECT number, hash, toUInt32(timestamp) FROM (SELECT number, hash, timestamp, is_canonical FROM blocks" +
				" WHERE chain_id = ? AND number IN (?, ?) ORDER BY number, version DESC LIMIT 1 BY number) WHERE is_canonical = 1",
			args: []any{"1", uint64(5), uint64(9)},
		},
		{
			name: "transaction fees, no raw",
			stmt: txFeesQuery{"1", []Position{{4, 0}}},
			sql: "SELECT block_number, tx_index, hash, gas_price, effective_gas_price, gas_used FROM (SELECT block_number," +
				" tx_index, hash, gas_price, effective_gas_price, gas_used, is_canonical FROM transactions" +
				" WHERE chain_id = ? AND block_number IN (?) AND (block_number, tx_index) IN ((?, ?))" +
				" ORDER BY block_number, tx_index, version DESC LIMIT 1 BY block_number, tx_index) WHERE is_canonical = 1",
			args: []any{"1", uint64(4), uint64(4), uint32(0)},
		},
		{
			name: "block by hash",
			stmt: blockHeightsByHashQuery{"1", "0xab", 0, 99},
			sql: "SELECT number FROM (SELECT number, is_canonical FROM block_by_hash WHERE chain_id = ? AND hash = ?" +
				" AND number BETWEEN ? AND ? ORDER BY number, version DESC LIMIT 1 BY number) WHERE is_canonical = 1" +
				" ORDER BY number LIMIT 16",
			args: []any{"1", "0xab", uint64(0), uint64(99)},
		},
		{
			name: "first block at or after a time",
			stmt: heightAtTimeQuery{chainID: "1", lo: 100, hi: 3700, min: 0, max: 50},
			sql: "SELECT number, toUInt32(timestamp) FROM (SELECT number, timestamp, is_canonical FROM block_by_time" +
				" WHERE chain_id = ? AND timestamp BETWEEN toDateTime(?) AND toDateTime(?) AND number BETWEEN ? AND ?" +
				" ORDER BY timestamp, number, version DESC LIMIT 1 BY timestamp, number) WHERE is_canonical = 1" +
				" ORDER BY timestamp, number LIMIT 1",
			args: []any{"1", uint64(100), uint64(3700), uint64(0), uint64(50)},
		},
		{
			name: "last block at or before a time",
			stmt: heightAtTimeQuery{chainID: "1", lo: 0, hi: 100, min: 0, max: 50, last: true},
			sql: "SELECT number, toUInt32(timestamp) FROM (SELECT number, timestamp, is_canonical FROM block_by_time" +
				" WHERE chain_id = ? AND timestamp BETWEEN toDateTime(?) AND toDateTime(?) AND number BETWEEN ? AND ?" +
				" ORDER BY timestamp, number, version DESC LIMIT 1 BY timestamp, number) WHERE is_canonical = 1" +
				" ORDER BY timestamp DESC, number DESC LIMIT 1",
			args: []any{"1", uint64(0), uint64(100), uint64(0), uint64(50)},
		},
		{
			name: "transaction by hash",
			stmt: txPositionsByHashQuery{"1", "0xcd", 1, 9},
			sql: "SELECT block_number, tx_index FROM (SELECT block_number, tx_index, is_canonical FROM tx_by_hash" +
				" WHERE chain_id = ? AND hash = ? AND block_number BETWEEN ? AND ?" +
				" ORDER BY block_number, tx_index, version DESC LIMIT 1 BY block_number, tx_index) WHERE is_canonical = 1" +
				" ORDER BY block_number, tx_index LIMIT 16",
			args: []any{"1", "0xcd", uint64(1), uint64(9)},
		},
		{
			name: "transactions at positions, one IN per height",
			stmt: transactionsAtQuery{"1", []Position{{4, 0}, {4, 2}, {6, 1}}, txAllColumns},
			sql: "SELECT " + txReadColumns + " FROM (SELECT " + txReadColumns + ", is_canonical FROM transactions" +
				" WHERE chain_id = ? AND block_number IN (?, ?) AND (block_number, tx_index) IN ((?, ?), (?, ?), (?, ?))" +
				" ORDER BY block_number, tx_index, version DESC LIMIT 1 BY block_number, tx_index) WHERE is_canonical = 1" +
				" ORDER BY block_number, tx_index",
			args: []any{"1", uint64(4), uint64(6), uint64(4), uint32(0), uint64(4), uint32(2), uint64(6), uint32(1)},
		},
		{
			name: "transactions of transfers at positions: the inner read leaves out what a listing does not use",
			stmt: transactionsAtQuery{"1", []Position{{6, 1}}, txTransferColumns},
			sql: "SELECT block_number, '' AS block_hash, tx_index, '' AS hash, toUInt64(0) AS type, '' AS from_address," +
				" '' AS to_address, '' AS value, nonce, gas, gas_price, toUInt8(0) AS status, gas_used, effective_gas_price," +
				" '' AS contract_address, toUInt32(0) AS log_count, raw, receipt_raw" +
				" FROM (SELECT block_number, tx_index, nonce, gas, gas_price, gas_used, effective_gas_price, raw, receipt_raw," +
				" is_canonical FROM transactions" +
				" WHERE chain_id = ? AND block_number IN (?) AND (block_number, tx_index) IN ((?, ?))" +
				" ORDER BY block_number, tx_index, version DESC LIMIT 1 BY block_number, tx_index) WHERE is_canonical = 1" +
				" ORDER BY block_number, tx_index",
			args: []any{"1", uint64(6), uint64(6), uint32(1)},
		},
		{
			name: "receipts at positions: the inner read leaves out what a receipt does not use",
			stmt: transactionsAtQuery{"1", []Position{{6, 1}}, txReceiptColumns},
			sql: "SELECT block_number, block_hash, tx_index, hash, type, from_address, to_address, '' AS value," +
				" toUInt64(0) AS nonce, toUInt64(0) AS gas, '' AS gas_price, status, gas_used, effective_gas_price, contract_address," +
				" toUInt32(0) AS log_count, '' AS raw, receipt_raw" +
				" FROM (SELECT block_number, block_hash, tx_index, hash, type, from_address, to_address," +
				" status, gas_used, effective_gas_price, contract_address, receipt_raw, is_canonical FROM transactions" +
				" WHERE chain_id = ? AND block_number IN (?) AND (block_number, tx_index) IN ((?, ?))" +
				" ORDER BY block_number, tx_index, version DESC LIMIT 1 BY block_number, tx_index) WHERE is_canonical = 1" +
				" ORDER BY block_number, tx_index",
			args: []any{"1", uint64(6), uint64(6), uint32(1)},
		},
		{
			name: "a block's transactions",
			stmt: blockTransactionsQuery{"1", 8, 2, 50},
			sql: "SELECT " + txReadColumns + " FROM (SELECT " + txReadColumns + ", is_canonical FROM transactions" +
				" WHERE chain_id = ? AND block_number = ? AND tx_index >= ?" +
				" ORDER BY block_number, tx_index, version DESC LIMIT 1 BY block_number, tx_index) WHERE is_canonical = 1" +
				" ORDER BY tx_index LIMIT ?",
			args: []any{"1", uint64(8), uint32(2), 50},
		},
		{
			name: "an address's transactions, newest first after a cursor",
			stmt: addressTxPositionsQuery{"1", "0xaa", 0, 99, true, after, 25, 0},
			sql: "SELECT block_number, tx_index FROM (SELECT block_number, tx_index, is_canonical FROM address_txs" +
				" WHERE chain_id = ? AND address = ? AND block_number BETWEEN ? AND ?" +
				" AND (block_number < ? OR (block_number = ? AND tx_index < ?))" +
				" ORDER BY block_number, tx_index, version DESC LIMIT 1 BY block_number, tx_index) WHERE is_canonical = 1" +
				" ORDER BY block_number DESC, tx_index DESC LIMIT ?",
			args: []any{"1", "0xaa", uint64(0), uint64(99), uint64(7), uint64(7), uint32(3), 25},
		},
		{
			name: "an address's transactions, oldest first, a page by offset",
			stmt: addressTxPositionsQuery{"1", "0xaa", 5, 99, false, nil, 10, 20},
			sql: "SELECT block_number, tx_index FROM (SELECT block_number, tx_index, is_canonical FROM address_txs" +
				" WHERE chain_id = ? AND address = ? AND block_number BETWEEN ? AND ?" +
				" ORDER BY block_number, tx_index, version DESC LIMIT 1 BY block_number, tx_index) WHERE is_canonical = 1" +
				" ORDER BY block_number, tx_index LIMIT ? OFFSET ?",
			args: []any{"1", "0xaa", uint64(5), uint64(99), 10, 20},
		},
		{
			name: "logs of a range",
			stmt: logsQuery{chainID: "1", from: 1, to: 9, limit: 100},
			sql: "SELECT " + logReadColumns + " FROM logs FINAL WHERE chain_id = ? AND block_number BETWEEN ? AND ?" +
				" AND is_canonical = 1 ORDER BY block_number, log_index LIMIT ?",
			args: []any{"1", uint64(1), uint64(9), 100},
		},
		{
			name: "logs of an address with topics and a cursor",
			stmt: logsQuery{chainID: "1", from: 1, to: 9, after: after, limit: 10, offset: 5, filter: LogFilter{
				Address: "0xee",
				Topics:  []TopicTerm{{0, "0xt0"}, {2, "0xt2"}, {3, "0xt3"}},
				Or:      []bool{true, false},
			}},
			sql: "SELECT " + logReadColumns + " FROM logs PREWHERE address = ?" +
				" AND ((topic0 = ? OR topic2 = ?) AND topic3 = ?)" +
				" WHERE " + addressHeights + " AND is_canonical = 1 AND (block_number, log_index, version) IN" +
				" (SELECT block_number, log_index, max(version) FROM logs WHERE " + addressHeights +
				" GROUP BY block_number, log_index)" +
				" ORDER BY block_number, log_index LIMIT 1 BY block_number, log_index LIMIT ? OFFSET ?",
			args: []any{"0xee", "0xt0", "0xt2", "0xt3",
				"1", uint64(1), uint64(9), "1", "0xee", uint64(1), uint64(9), uint64(7), uint64(7), uint32(3),
				"1", uint64(1), uint64(9), "1", "0xee", uint64(1), uint64(9), uint64(7), uint64(7), uint32(3), 10, 5},
		},
		{
			name: "logs of topics joined by AND: each narrows the heights through topic_heights",
			stmt: logsQuery{chainID: "1", from: 1, to: 9, limit: 10, filter: LogFilter{
				Topics: []TopicTerm{{0, hash('c', 0xa0)}, {2, hash('c', 0xa2)}},
				Or:     []bool{false},
			}},
			sql: "SELECT " + logReadColumns + " FROM logs PREWHERE (topic0 = ? AND topic2 = ?)" +
				" WHERE " + twoTopicHeights + " AND is_canonical = 1 AND (block_number, log_index, version) IN" +
				" (SELECT block_number, log_index, max(version) FROM logs WHERE " + twoTopicHeights +
				" GROUP BY block_number, log_index)" +
				" ORDER BY block_number, log_index LIMIT 1 BY block_number, log_index LIMIT ?",
			args: []any{hash('c', 0xa0), hash('c', 0xa2),
				"1", uint64(1), uint64(9), "1", uint64(0xa0), uint64(1), uint64(9), "1", uint64(0xa2), uint64(1), uint64(9),
				"1", uint64(1), uint64(9), "1", uint64(0xa0), uint64(1), uint64(9), "1", uint64(0xa2), uint64(1), uint64(9), 10},
		},
		{
			name: "logs of addresses and topic sets by position (eth_getLogs)",
			stmt: logsQuery{chainID: "1", from: 1, to: 9, limit: 10, filter: LogFilter{
				AnyAddress: []string{"0xa1", "0xa2"},
				AnyTopic:   [4][]string{1: {hash('d', 0xb1), hash('d', 0xb2)}},
			}},
			sql: "SELECT " + logReadColumns + " FROM logs PREWHERE address IN (?, ?) AND topic1 IN (?, ?)" +
				" WHERE " + addressesTopicHeights + " AND is_canonical = 1 AND (block_number, log_index, version) IN" +
				" (SELECT block_number, log_index, max(version) FROM logs WHERE " + addressesTopicHeights +
				" GROUP BY block_number, log_index)" +
				" ORDER BY block_number, log_index LIMIT 1 BY block_number, log_index LIMIT ?",
			args: []any{"0xa1", "0xa2", hash('d', 0xb1), hash('d', 0xb2),
				"1", uint64(1), uint64(9), "1", "0xa1", "0xa2", uint64(1), uint64(9), "1", uint64(0xb1), uint64(0xb2), uint64(1), uint64(9),
				"1", uint64(1), uint64(9), "1", "0xa1", "0xa2", uint64(1), uint64(9), "1", uint64(0xb1), uint64(0xb2), uint64(1), uint64(9), 10},
		},
		{
			name: "the heights an address's and a topic's look-ups name, after a cursor",
			stmt: namedHeightsQuery{logsQuery{chainID: "1", from: 1, to: 9, after: after, filter: LogFilter{
				Address: "0xee", AnyTopic: [4][]string{1: {hash('d', 0xb1)}},
			}}, 11},
			sql: "SELECT DISTINCT block_number FROM (" + addressLogs + " WHERE chain_id = ? AND address IN (?)" +
				" AND block_number BETWEEN ? AND ? ORDER BY block_number, log_index, version DESC LIMIT 1 BY block_number, log_index)" +
				" WHERE is_canonical = 1) WHERE block_number IN (SELECT block_number FROM topic_heights" +
				" WHERE chain_id = ? AND topic_key IN (?) AND block_number BETWEEN ? AND ?) AND block_number >= ?" +
				" ORDER BY block_number LIMIT ?",
			args: []any{"1", "0xee", uint64(1), uint64(9), "1", uint64(0xb1), uint64(1), uint64(9), uint64(7), 11},
		},
		{
			name: "logs of a topic at heights named already",
			stmt: logsQuery{chainID: "1", from: 1, to: 9, limit: 10, heights: []uint64{3, 8}, filter: LogFilter{
				AnyTopic: [4][]string{1: {hash('d', 0xb1)}},
			}},
			sql: "SELECT " + logReadColumns + " FROM logs PREWHERE topic1 IN (?)" +
				" WHERE chain_id = ? AND block_number IN (?, ?) AND is_canonical = 1 AND (block_number, log_index, version) IN" +
				" (SELECT block_number, log_index, max(version) FROM logs WHERE chain_id = ? AND block_number IN (?, ?)" +
				" GROUP BY block_number, log_index)" +
				" ORDER BY block_number, log_index LIMIT 1 BY block_number, log_index LIMIT ?",
			args: []any{hash('d', 0xb1), "1", uint64(3), uint64(8), "1", uint64(3), uint64(8), 10},
		},
		{
			name: "a transaction's logs",
			stmt: txLogsQuery{"1", 8, 1},
			sql: "SELECT " + logReadColumns + " FROM (SELECT " + logReadColumns + ", is_canonical FROM logs" +
				" WHERE chain_id = ? AND block_number = ? ORDER BY log_index, version DESC LIMIT 1 BY log_index)" +
				" WHERE is_canonical = 1 AND tx_index = ? ORDER BY log_index",
			args: []any{"1", uint64(8), uint32(1)},
		},
		{
			name: "aggregates of two heights",
			stmt: aggregatesAtQuery{"1", []uint64{9, 20}},
			sql: "SELECT number, argMax(block_hash, version), argMax(txs, version), argMax(logs, version)," +
				" argMax(bytes, version) FROM aggregates WHERE chain_id = ? AND number IN (?, ?) GROUP BY number",
			args: []any{"1", uint64(9), uint64(20)},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sql, args := tc.stmt.toSQL()
			require.Equal(t, tc.sql, sql)
			require.Equal(t, tc.args, args)
			require.Equal(t, len(args), strings.Count(sql, "?"), "one argument per placeholder")
			upper := strings.ToUpper(sql)
			// A PREWHERE only where no version is collapsed (18.16 filters
			// before FINAL collapses) and never on is_canonical: the
			// filtered logs' read, whose newest-version check is its own.
			if strings.Contains(upper, "PREWHERE") {
				require.NotContains(t, upper, "FINAL")
				require.Contains(t, sql, "(block_number, log_index, version) IN")
				require.NotRegexp(t, `PREWHERE [^W]*is_canonical`, sql)
			}
			for _, banned := range []string{"DATETIME64", "UINT256", "MAP(", "JSON", "OVER (", "NEIGHBOR(", " VALUES"} {
				require.NotContains(t, upper, banned)
			}
			// Main and look-up tables are read with FINAL, or with the newest
			// version per key (LIMIT 1 BY after version DESC), then only
			// canonical rows, tested outside the subquery that picks the
			// version, or (filtered logs) a row kept only when its version is
			// the newest of its key; aggregates and chain_state have no
			// tombstones and use argMax.
			switch {
			case strings.Contains(sql, "(block_number, log_index, version) IN"):
				require.Regexp(t, ` AND is_canonical = 1 AND \(block_number, log_index, version\) IN`+
					` \(SELECT block_number, log_index, max\(version\) FROM logs WHERE chain_id = \? AND block_number (BETWEEN|IN)`, sql)
				require.NotContains(t, sql, "FINAL")
			case strings.Contains(sql, "LIMIT 1 BY"):
				require.Regexp(t, `version DESC LIMIT 1 BY [a-z_, ]+\) WHERE is_canonical = 1`, sql)
				require.NotRegexp(t, `is_canonical = 1[^)]*version DESC LIMIT 1 BY`, sql,
					"the canonical test never comes before the version is picked")
			case strings.Contains(sql, "FINAL"):
				require.Contains(t, sql, "is_canonical = 1")
			default:
				require.Contains(t, sql, "argMax(")
			}
		})
	}
}
