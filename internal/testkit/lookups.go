package testkit

import (
	"context"
	"testing"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/stretchr/testify/require"
)

// lookupFills derive each look-up table (tx_by_hash, block_by_hash,
// block_by_time, address_txs, address_logs) from the main tables of one
// chain, as the issue-10 backfill migrations do for data indexed before
// the write path filled them.
var lookupFills = []struct{ table, stmt string }{
	{"tx_by_hash", `INSERT INTO tx_by_hash (chain_id, hash, block_number, tx_index, block_hash, is_canonical, version)
		SELECT chain_id, hash, block_number, tx_index, block_hash, is_canonical, version
		FROM transactions FINAL WHERE chain_id = ? AND is_canonical = 1`},
	{"block_by_hash", `INSERT INTO block_by_hash (chain_id, hash, number, is_canonical, version)
		SELECT chain_id, hash, number, is_canonical, version
		FROM blocks FINAL WHERE chain_id = ? AND is_canonical = 1`},
	{"block_by_time", `INSERT INTO block_by_time (chain_id, timestamp, number, is_canonical, version)
		SELECT chain_id, timestamp, number, is_canonical, version
		FROM blocks FINAL WHERE chain_id = ? AND is_canonical = 1`},
	{"address_txs", `INSERT INTO address_txs (chain_id, address, block_number, tx_index, hash, is_from, is_to, is_creation, is_canonical, version)
		SELECT chain_id, address, block_number, tx_index, hash,
		       address = from_address, address = to_address, address = contract_address, is_canonical, version
		FROM transactions FINAL
		ARRAY JOIN arrayDistinct(arrayFilter(a -> a != '', [from_address, to_address, contract_address])) AS address
		WHERE chain_id = ? AND is_canonical = 1`},
	{"address_logs", `INSERT INTO address_logs (chain_id, address, block_number, log_index, topic0, is_canonical, version)
		SELECT chain_id, address, block_number, log_index, topic0, is_canonical, version
		FROM logs FINAL WHERE chain_id = ? AND is_canonical = 1`},
}

// FillLookups makes sure the look-up tables hold the chain's rows, for
// tests that read or prune them: a table the write path left without a
// row of the chain is filled from the main tables the way the backfill
// migrations do. Where the write path fills the look-up tables itself
// (branch store10 of issue 10), every table already has rows and nothing
// is written; until then this is what puts rows there. It returns the
// tables it filled.
func FillLookups(t testing.TB, conn driver.Conn, chainID string) []string {
	t.Helper()
	ctx := context.Background()
	var filled []string
	for _, f := range lookupFills {
		var n uint64
		require.NoError(t, conn.QueryRow(ctx, "SELECT count() FROM "+f.table+" WHERE chain_id = ?", chainID).Scan(&n), f.table)
		if n > 0 {
			continue
		}
		require.NoError(t, conn.Exec(ctx, f.stmt, chainID), f.table)
		filled = append(filled, f.table)
	}
	return filled
}
