package storage

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/storage/schema"
)

// Every statement is a value with toSQL, so the text and its arguments can
// be checked without a server. Arguments are bound by clickhouse-go on the
// client (`?`), which 18.16 needs: it has no server-side query parameters.
// Nothing here uses window functions, neighbor() or DateTime64, so the same
// text runs on 18.16 and on a modern server.

// Table names. They are constants, never user input, so they are written
// into statements directly.
const (
	tableBlocks           = "blocks"
	tableTransactions     = "transactions"
	tableLogs             = "logs"
	tableIndexedHeights   = "indexed_heights"
	tableIndexedChunks    = "indexed_chunks"
	tableChainState       = "chain_state"
	tableSchemaMigrations = schema.MigrationsTable

	// Look-up tables (migrations 0010-0014): filled by the write path with
	// the rows they point at, read by the query API.
	tableTxByHash    = "tx_by_hash"
	tableBlockByHash = "block_by_hash"
	tableBlockByTime = "block_by_time"
	tableAddressTxs  = "address_txs"
	tableAddressLogs = "address_logs"
	// tableTopicHeights: the heights of each log topic (0062), hints with
	// no tombstones (lookups_topics.go).
	tableTopicHeights = "topic_heights"
	// tableAggregates holds cumulative counts per height (migration 0015).
	tableAggregates = "aggregates"
)

// Column lists of the inserts. The order is the order of the Append
// arguments in clickhouse.go; naming the columns keeps an insert valid when
// a later migration adds a column with a default.
var (
	blockColumns = []string{
		"chain_id", "number", "hash", "parent_hash", "timestamp", "miner",
		"gas_used", "gas_limit", "base_fee_per_gas", "size", "tx_count",
		"log_count", "raw", "version",
	}
	transactionColumns = []string{
		"chain_id", "block_number", "block_hash", "tx_index", "hash", "type",
		"from_address", "to_address", "value", "nonce", "gas", "gas_price",
		"status", "gas_used", "effective_gas_price", "contract_address",
		"log_count", "raw", "receipt_raw", "version",
	}
	logColumns = []string{
		"chain_id", "block_number", "block_hash", "tx_hash", "tx_index",
		"log_index", "address", "topic0", "topic1", "topic2", "topic3",
		"topic_count", "data", "raw", "version",
	}
	indexedHeightColumns = []string{"chain_id", "number", "hash", "indexed_at", "version"}
	indexedChunkColumns  = []string{"chain_id", "first", "last", "checked_at"}
	chainStateColumns    = []string{"chain_id", "key", "value", "updated_at", "version"}
	migrationColumns     = []string{"version", "name", "checksum", "applied_at"}
)

// insertStmt is the head of a PrepareBatch insert. There is deliberately no
// VALUES part: `Exec("INSERT … VALUES")` hangs against 18.16, and the batch
// protocol sends the rows as a native block instead.
type insertStmt struct {
	table   string
	columns []string
}

func (s insertStmt) toSQL() (string, []any) {
	return fmt.Sprintf("INSERT INTO %s (%s)", s.table, strings.Join(s.columns, ", ")), nil
}

// indexedCountQuery counts the marks of one height; duplicates of the mark
// only make the count larger than one, which still means indexed.
type indexedCountQuery struct {
	chainID string
	height  uint64
}

func (q indexedCountQuery) toSQL() (string, []any) {
	return "SELECT count() FROM indexed_heights WHERE chain_id = ? AND number = ?",
		[]any{q.chainID, q.height}
}

// lastIndexedQuery returns the highest mark in one partition's range and
// the number of marks there; the count tells "no mark" apart from "height
// 0 marked", since max() of no rows is 0.
type lastIndexedQuery struct {
	chainID  string
	from, to uint64
}

func (q lastIndexedQuery) toSQL() (string, []any) {
	return "SELECT max(number), count() FROM indexed_heights WHERE chain_id = ? AND number BETWEEN ? AND ?",
		[]any{q.chainID, q.from, q.to}
}

// partitionsQuery lists the partitions of a table that hold active parts.
type partitionsQuery struct {
	database, table string
}

func (q partitionsQuery) toSQL() (string, []any) {
	return "SELECT DISTINCT partition_id FROM system.parts WHERE database = ? AND table = ? AND active",
		[]any{q.database, q.table}
}

// chunkCountsQuery counts distinct indexed heights per aligned chunk
// ([k*chunk, k*chunk+chunk-1]) inside the runs. A chunk whose count equals
// its width has no hole and is never read row by row. Unmerged
// ReplacingMergeTree parts may hold a height twice: FINAL collapses them by
// merging the parts' sorted streams, several times cheaper than hashing
// every height into a uniqExact set (BenchmarkReadsAtScale).
type chunkCountsQuery struct {
	chainID string
	runs    []chaindata.HeightRange // the heights to count, ascending
	chunk   uint64
}

func (q chunkCountsQuery) toSQL() (string, []any) {
	within := make([]string, len(q.runs))
	args := make([]any, 0, 2+2*len(q.runs))
	args = append(args, q.chunk, q.chainID)
	for i, r := range q.runs {
		within[i] = "number BETWEEN ? AND ?"
		args = append(args, r.From, r.To)
	}
	return "SELECT intDiv(number, ?) AS c, count() FROM indexed_heights FINAL" +
		" WHERE chain_id = ? AND (" + strings.Join(within, " OR ") + ") GROUP BY c", args
}

// fullChunksQuery lists the chunks of [from, to] of one size recorded
// complete (the first height of each; a chunk may be listed twice).
type fullChunksQuery struct {
	chainID  string
	from, to uint64
	chunk    uint64
}

func (q fullChunksQuery) toSQL() (string, []any) {
	return "SELECT first FROM indexed_chunks WHERE chain_id = ? AND first BETWEEN ? AND ? AND last = first + ?",
		[]any{q.chainID, q.from, q.to, q.chunk - 1}
}

// indexedNumbersQuery lists the indexed heights of one range once each, in
// order, so the caller can walk them and emit the holes.
type indexedNumbersQuery struct {
	chainID  string
	from, to uint64
}

func (q indexedNumbersQuery) toSQL() (string, []any) {
	return "SELECT DISTINCT number FROM indexed_heights" +
			" WHERE chain_id = ? AND number BETWEEN ? AND ? ORDER BY number",
		[]any{q.chainID, q.from, q.to}
}

// loadStateQuery reads the newest value of one state key; count() tells a
// missing key apart from a stored 0.
type loadStateQuery struct {
	chainID string
	key     string
}

func (q loadStateQuery) toSQL() (string, []any) {
	return "SELECT argMax(value, version), count() FROM chain_state WHERE chain_id = ? AND key = ?",
		[]any{q.chainID, q.key}
}

// databaseExistsQuery lets Open skip CREATE DATABASE when the database is
// there, so a user without the CREATE DATABASE grant can still connect.
type databaseExistsQuery struct {
	name string
}

func (q databaseExistsQuery) toSQL() (string, []any) {
	return "SELECT count() FROM system.databases WHERE name = ?", []any{q.name}
}

// columnExistsQuery lets Migrate skip an ADD COLUMN that already ran.
type columnExistsQuery struct {
	database, table, column string
}

func (q columnExistsQuery) toSQL() (string, []any) {
	return "SELECT count() FROM system.columns WHERE database = ? AND table = ? AND name = ?",
		[]any{q.database, q.table, q.column}
}

// tablesExistQuery lists which of some tables exist, so that Migrate can
// tell a RENAME that already ran.
type tablesExistQuery struct {
	database string
	tables   []string
}

func (q tablesExistQuery) toSQL() (string, []any) {
	args := []any{q.database}
	for _, t := range q.tables {
		args = append(args, t)
	}
	return "SELECT name FROM system.tables WHERE database = ? AND name IN (" + placeholders(len(q.tables)) + ")", args
}

// identifierRE is a name that needs no quoting (the rule
// config.ClickHouse.Validate applies to the database, which is what makes
// createDatabaseStmt safe; checked here again for the chain registry's
// names).
var identifierRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

type createDatabaseStmt struct {
	name string
}

func (s createDatabaseStmt) toSQL() (string, []any) {
	return fmt.Sprintf("CREATE DATABASE IF NOT EXISTS %s", s.name), nil
}

// createSchemaMigrationsStmt is the one table the code creates outside the
// numbered files: it records which files ran, so it must exist first.
// Plain ReplacingMergeTree (no version column): two processes migrating at
// once may both record a file, and those rows are identical.
type createSchemaMigrationsStmt struct{}

func (createSchemaMigrationsStmt) toSQL() (string, []any) {
	return "CREATE TABLE IF NOT EXISTS schema_migrations (" +
		"version UInt32, name String, checksum String, applied_at DateTime" +
		") ENGINE = ReplacingMergeTree ORDER BY version", nil
}

// appliedMigrationsQuery reads what has run. GROUP BY collapses rows
// recorded twice.
type appliedMigrationsQuery struct{}

func (appliedMigrationsQuery) toSQL() (string, []any) {
	return "SELECT version, any(name), any(checksum) FROM schema_migrations GROUP BY version ORDER BY version", nil
}

// rangeCountsQuery counts the distinct indexed heights of each of a few
// ranges in one round trip (FINAL for the duplicates, as chunkCountsQuery);
// the WHERE keeps the read to the ranges' granules.
type rangeCountsQuery struct {
	chainID string
	ranges  []chaindata.HeightRange
}

func (q rangeCountsQuery) toSQL() (string, []any) {
	counts := make([]string, len(q.ranges))
	within := make([]string, len(q.ranges))
	countArgs := make([]any, 0, 2*len(q.ranges))
	whereArgs := make([]any, 0, 1+2*len(q.ranges))
	whereArgs = append(whereArgs, q.chainID)
	for i, r := range q.ranges {
		counts[i] = "countIf(number BETWEEN ? AND ?)"
		within[i] = "number BETWEEN ? AND ?"
		countArgs = append(countArgs, r.From, r.To)
		whereArgs = append(whereArgs, r.From, r.To)
	}
	return "SELECT " + strings.Join(counts, ", ") + " FROM indexed_heights FINAL" +
			" WHERE chain_id = ? AND (" + strings.Join(within, " OR ") + ")",
		append(countArgs, whereArgs...)
}
