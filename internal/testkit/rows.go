package testkit

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/localstack"
)

// Connect opens a connection to database on ch over its protocol.
func Connect(t testing.TB, ch *localstack.ClickHouse, database string) driver.Conn {
	t.Helper()
	conn := connect(t, ch.Addr, database)
	t.Cleanup(func() { conn.Close() })
	return conn
}

// Reads that only tests make of the stored chain, to compare it with the
// node: the indexer's store has no method for them. Each opens a
// connection of its own to the database at addr.

// CountRows counts the logical rows (one per key, FINAL; tombstones left
// out) of a chain's blocks, transactions and logs. It reads whole tables.
func CountRows(t testing.TB, addr, database, chainID string) (blocks, txs, logs uint64) {
	t.Helper()
	conn := connect(t, addr, database)
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	counts := [3]uint64{}
	for i, table := range []string{"blocks", "transactions", "logs"} {
		// is_canonical in WHERE runs after FINAL (never as PREWHERE), so a
		// tombstone hides the row it supersedes.
		q := fmt.Sprintf("SELECT count() FROM %s FINAL WHERE chain_id = ? AND is_canonical = 1", table)
		require.NoError(t, conn.QueryRow(ctx, q, chainID).Scan(&counts[i]), "counting %s of chain %q", table, chainID)
	}
	return counts[0], counts[1], counts[2]
}

// BlockHashes returns the stored canonical hash per height in [from, to]
// (the newest write of a height, by argMax over version, exact whether or
// not parts have merged); a height without a block row, or whose newest
// row is a tombstone, is absent.
func BlockHashes(t testing.TB, addr, database, chainID string, from, to uint64) map[uint64]string {
	t.Helper()
	conn := connect(t, addr, database)
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rows, err := conn.Query(ctx, "SELECT number, argMax(hash, version) FROM blocks"+
		" WHERE chain_id = ? AND number BETWEEN ? AND ? GROUP BY number"+
		" HAVING argMax(is_canonical, version) = 1", chainID, from, to)
	require.NoError(t, err, "reading block hashes of chain %q", chainID)
	defer rows.Close()
	out := map[uint64]string{}
	for rows.Next() {
		var n uint64
		var hash string
		require.NoError(t, rows.Scan(&n, &hash))
		out[n] = hash
	}
	require.NoError(t, rows.Err())
	return out
}

// connect opens a connection to the engine at addr, over the protocol it
// was started with (StartEngine; native for any other address).
func connect(t testing.TB, addr, database string) driver.Conn {
	t.Helper()
	opts := &clickhouse.Options{Addr: []string{addr}, Auth: clickhouse.Auth{Database: database}}
	if p, ok := protocols.Load(addr); ok && p == localstack.ProtocolHTTP {
		opts.Protocol = clickhouse.HTTP
	}
	conn, err := clickhouse.Open(opts)
	require.NoError(t, err)
	return conn
}
