package storage

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/storage/schema"
)

// The statements are checked as text: these tests need no server and pin
// what is sent, including that nothing 18.16 lacks slips in.
func TestStatementsToSQL(t *testing.T) {
	cases := []struct {
		name string
		stmt statement
		sql  string
		args []any
	}{
		{
			name: "insert blocks names every column",
			stmt: insertStmt{tableBlocks, blockColumns},
			sql: "INSERT INTO blocks (chain_id, number, hash, parent_hash, timestamp, miner, gas_used, gas_limit," +
				" base_fee_per_gas, size, tx_count, log_count, raw, version)",
		},
		{
			name: "insert indexed heights",
			stmt: insertStmt{tableIndexedHeights, indexedHeightColumns},
			sql:  "INSERT INTO indexed_heights (chain_id, number, hash, indexed_at, version)",
		},
		{
			name: "is indexed",
			stmt: indexedCountQuery{"1", 42},
			sql:  "SELECT count() FROM indexed_heights WHERE chain_id = ? AND number = ?",
			args: []any{"1", uint64(42)},
		},
		{
			name: "last indexed",
			stmt: lastIndexedQuery{"1", 2_000_000, 2_999_999},
			sql:  "SELECT max(number), count() FROM indexed_heights WHERE chain_id = ? AND number BETWEEN ? AND ?",
			args: []any{"1", uint64(2_000_000), uint64(2_999_999)},
		},
		{
			name: "partitions",
			stmt: partitionsQuery{"tideline", "indexed_heights"},
			sql:  "SELECT DISTINCT partition_id FROM system.parts WHERE database = ? AND table = ? AND active",
			args: []any{"tideline", "indexed_heights"},
		},
		{
			name: "chunk counts",
			stmt: chunkCountsQuery{chainID: "1", runs: []chaindata.HeightRange{{From: 5, To: 19_999}, {From: 40_000, To: 49_999}}, chunk: 10_000},
			sql: "SELECT intDiv(number, ?) AS c, count() FROM indexed_heights FINAL" +
				" WHERE chain_id = ? AND (number BETWEEN ? AND ? OR number BETWEEN ? AND ?) GROUP BY c",
			args: []any{uint64(10_000), "1", uint64(5), uint64(19_999), uint64(40_000), uint64(49_999)},
		},
		{
			name: "range counts in one query",
			stmt: rangeCountsQuery{"1", []chaindata.HeightRange{{From: 1, To: 10}, {From: 20, To: 20}}},
			sql: "SELECT countIf(number BETWEEN ? AND ?), countIf(number BETWEEN ? AND ?) FROM indexed_heights FINAL" +
				" WHERE chain_id = ? AND (number BETWEEN ? AND ? OR number BETWEEN ? AND ?)",
			args: []any{uint64(1), uint64(10), uint64(20), uint64(20), "1", uint64(1), uint64(10), uint64(20), uint64(20)},
		},
		{
			name: "indexed numbers",
			stmt: indexedNumbersQuery{"1", 10, 19},
			sql:  "SELECT DISTINCT number FROM indexed_heights WHERE chain_id = ? AND number BETWEEN ? AND ? ORDER BY number",
			args: []any{"1", uint64(10), uint64(19)},
		},
		{
			name: "stored blocks",
			stmt: storedBlocksQuery{"1", 3, 7},
			sql: "SELECT number, argMax(hash, version), argMax(parent_hash, version), argMax(is_canonical, version)" +
				" FROM blocks WHERE chain_id = ? AND number BETWEEN ? AND ? GROUP BY number ORDER BY number",
			args: []any{"1", uint64(3), uint64(7)},
		},
		{
			name: "stored transactions, logs and blocks with their look-up keys in one query",
			stmt: canonicalPositionsQuery{"1", 5, 1004},
			sql: "SELECT 0, block_number, tx_index, argMax(block_hash, version), argMax(hash, version)," +
				" argMax(from_address, version), argMax(to_address, version), argMax(contract_address, version), toUInt32(0)" +
				" FROM transactions WHERE chain_id = ? AND block_number BETWEEN ? AND ?" +
				" GROUP BY block_number, tx_index HAVING argMax(is_canonical, version) = 1" +
				" UNION ALL" +
				" SELECT 1, block_number, log_index, argMax(block_hash, version), argMax(address, version), '', '', '', toUInt32(0)" +
				" FROM logs WHERE chain_id = ? AND block_number BETWEEN ? AND ?" +
				" GROUP BY block_number, log_index HAVING argMax(is_canonical, version) = 1" +
				" UNION ALL" +
				" SELECT 2, number, toUInt32(0), argMax(hash, version), argMax(parent_hash, version), '', '', ''," +
				" toUInt32(argMax(timestamp, version))" +
				" FROM blocks WHERE chain_id = ? AND number BETWEEN ? AND ?" +
				" GROUP BY number HAVING argMax(is_canonical, version) = 1",
			args: []any{"1", uint64(5), uint64(1004), "1", uint64(5), uint64(1004), "1", uint64(5), uint64(1004)},
		},
		{
			name: "insert address_txs names every column",
			stmt: insertStmt{tableAddressTxs, addressTxColumns},
			sql: "INSERT INTO address_txs (chain_id, address, block_number, tx_index, hash, is_from, is_to, is_creation," +
				" is_canonical, version)",
		},
		{
			name: "rewrite transactions names is_canonical",
			stmt: insertStmt{tableTransactions, transactionRewriteColumns},
			sql: "INSERT INTO transactions (chain_id, block_number, block_hash, tx_index, hash, type, from_address," +
				" to_address, value, nonce, gas, gas_price, status, gas_used, effective_gas_price, contract_address," +
				" log_count, raw, receipt_raw, version, is_canonical)",
		},
		{
			name: "column exists",
			stmt: columnExistsQuery{"tideline", "logs", "is_canonical"},
			sql:  "SELECT count() FROM system.columns WHERE database = ? AND table = ? AND name = ?",
			args: []any{"tideline", "logs", "is_canonical"},
		},
		{
			name: "load state",
			stmt: loadStateQuery{"1", "watermark"},
			sql:  "SELECT argMax(value, version), count() FROM chain_state WHERE chain_id = ? AND key = ?",
			args: []any{"1", "watermark"},
		},
		{
			name: "database exists",
			stmt: databaseExistsQuery{"tideline"},
			sql:  "SELECT count() FROM system.databases WHERE name = ?",
			args: []any{"tideline"},
		},
		{
			name: "create database",
			stmt: createDatabaseStmt{"tideline"},
			sql:  "CREATE DATABASE IF NOT EXISTS tideline",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sql, args := tc.stmt.toSQL()
			require.Equal(t, tc.sql, sql)
			require.Equal(t, tc.args, args)
			// Client-side binding fills one `?` per argument.
			require.Equal(t, len(tc.args), strings.Count(sql, "?"))
		})
	}
}

// The inserts' column lists must match the tables: a renamed column in a
// migration without the list (or the reverse) is caught here without a
// server, and TestWriteBlockRoundTrip catches the Append order.
func TestInsertColumnsMatchMigrations(t *testing.T) {
	ms, err := schema.Numbered()
	require.NoError(t, err)
	ddl := map[string]string{}
	added := map[string][]string{}   // table → columns of ALTER TABLE … ADD COLUMN files
	dropped := map[string][]string{} // and of DROP COLUMN files
	for _, m := range ms {
		for _, table := range append([]string{tableBlocks, tableTransactions, tableLogs, tableIndexedHeights, tableChainState,
			tableTraces, tableAddressTraces, tableTopicHeights}, lookupTables...) {
			if strings.Contains(m.Stmt, "CREATE TABLE IF NOT EXISTS "+table+"\n") {
				ddl[table] = m.Stmt
			}
		}
		if sub := addColumnRE.FindStringSubmatch(m.Stmt); sub != nil {
			added[sub[1]] = append(added[sub[1]], sub[2])
		}
		if sub := dropColumnRE.FindStringSubmatch(m.Stmt); sub != nil {
			dropped[sub[1]] = append(dropped[sub[1]], sub[2])
		}
	}
	for table, cols := range map[string][]string{
		tableBlocks:         blockRewriteColumns,
		tableTransactions:   transactionRewriteColumns,
		tableLogs:           logRewriteColumns,
		tableIndexedHeights: indexedHeightColumns,
		tableChainState:     chainStateColumns,
		tableTxByHash:       txByHashColumns,
		tableBlockByHash:    blockByHashColumns,
		tableBlockByTime:    blockByTimeColumns,
		tableAddressTxs:     addressTxColumns,
		tableAddressLogs:    addressLogColumns,
		tableTopicHeights:   topicHeightColumns,
		tableTraces:         traceColumns,
		tableAddressTraces:  addressTraceColumns,
	} {
		stmt, ok := ddl[table]
		require.True(t, ok, "no migration creates %s", table)
		for _, col := range cols {
			require.NotContains(t, dropped[table], col, "table %s: column %s is written but a migration drops it", table, col)
			if slices.Contains(added[table], col) {
				continue
			}
			require.Regexp(t, `\n\s+`+col+`\s+[A-Z]`, stmt, "table %s has no column %s", table, col)
		}
		require.Contains(t, stmt, "ENGINE = ReplacingMergeTree(version)", table)
	}
	for _, table := range []string{tableBlocks, tableTransactions, tableLogs} {
		require.Equal(t, []string{"is_canonical"}, added[table], table)
	}
	require.Equal(t, map[string][]string{tableAddressTraces: {"tx_hash"}}, dropped)
}

// Features 18.16 lacks must not appear in any statement or migration.
func TestNoFeaturesMissingFrom1816(t *testing.T) {
	ms, err := schema.Numbered()
	require.NoError(t, err)
	base, err := schema.Embedded(ms)
	require.NoError(t, err)
	var texts []string
	for _, m := range append(ms, base.Tables...) {
		texts = append(texts, m.Stmt)
	}
	for _, s := range []statement{
		insertStmt{tableBlocks, blockColumns}, indexedCountQuery{}, lastIndexedQuery{},
		chunkCountsQuery{runs: []chaindata.HeightRange{{}}}, indexedNumbersQuery{},
		loadStateQuery{}, databaseExistsQuery{}, createSchemaMigrationsStmt{}, appliedMigrationsQuery{},
		storedBlocksQuery{}, canonicalPositionsQuery{}, columnExistsQuery{}, serverVersionQuery{}, partitionsQuery{}, rangeCountsQuery{ranges: []chaindata.HeightRange{{}}},
		insertStmt{tableLogs, logRewriteColumns}, insertStmt{tableAddressTxs, addressTxColumns},
		databaseTablesQuery{},
	} {
		sql, _ := s.toSQL()
		texts = append(texts, sql)
	}
	for _, text := range texts {
		upper := strings.ToUpper(text)
		for _, banned := range []string{
			"DATETIME64", "UINT256", "MAP(", "JSON", "OVER (", "OVER(", "NEIGHBOR(",
			"LOWCARDINALITY", "TTL", "CODEC", "DELETE FROM", " INDEX ", " VALUES",
		} {
			require.NotContains(t, upper, banned, text)
		}
	}
}
