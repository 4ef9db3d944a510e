package storage

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/config"
)

// BenchmarkModernOptions measures, on the modern engine, two forms a
// modern server offers for what tideline does by hand because of 18.16
// (the storage README's "On a modern server" notes them; the schema does
// not take them): a lightweight DELETE against the ALTER … DELETE
// mutation that removes a chain's rows, and a projection ordered by hash
// against the look-up table tx_by_hash for a transaction by hash. Run it
// on a modern lane:
//
//	TIDELINE_TEST_CLICKHOUSE=chdb-24.8 go test -run '^$' -bench BenchmarkModernOptions -benchtime 1x ./pkg/storage/
func BenchmarkModernOptions(b *testing.B) {
	if testCH.Native() {
		b.Skip("measures the modern engine's forms: run it with TIDELINE_TEST_CLICKHOUSE=chdb-24.8")
	}
	const heights = 10_000 // of 20 transactions and 40 logs each
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	c, err := Open(ctx, config.ClickHouse{Addr: testCH.Addr, Protocol: testCH.Protocol, Database: "b_modern", QueryTimeout: 10 * time.Minute}, zap.NewNop())
	require.NoError(b, err)
	defer c.Close()
	require.NoError(b, c.Migrate(ctx))
	for from := 1; from <= heights; from += bulkChunk {
		blocks := mixBlocks(uint64(from), bulkChunk, benchTxs, benchLogsPerTx) // a hash per transaction
		for _, chainID := range []string{"a", "b"} {
			require.NoError(b, c.WriteBlocks(ctx, chainID, blocks))
		}
	}
	timed := func(what string, stmts ...string) time.Duration {
		start := time.Now()
		for _, s := range stmts {
			require.NoError(b, c.execSQL(ctx, s), what)
		}
		return time.Since(start)
	}
	for range b.N {
		// A chain's rows out of logs: chain a by mutation, chain b by a
		// lightweight delete, each waited for.
		mut := timed("mutation", "ALTER TABLE logs DELETE WHERE chain_id = 'a' SETTINGS mutations_sync = 1")
		light := timed("lightweight", "DELETE FROM logs WHERE chain_id = 'b' SETTINGS lightweight_deletes_sync = 2")
		b.ReportMetric(mut.Seconds(), "delete-mutation-s")
		b.ReportMetric(light.Seconds(), "delete-lightweight-s")

		// A transaction by hash, 200 hashes spread over the chain: the
		// look-up table and then the main table (what the API does), or a
		// projection of transactions ordered by hash.
		hashes := make([]string, 200)
		for i := range hashes {
			n := uint64(1 + i*heights/len(hashes))
			hashes[i] = mixBlock(n, benchTxs, benchLogsPerTx).Transactions[i%benchTxs].Hash
		}
		lookup := func(h string) (uint64, error) {
			var bn uint64
			var idx uint32
			if err := c.conn.QueryRow(ctx, "SELECT block_number, tx_index FROM tx_by_hash WHERE chain_id = 'a' AND hash = ? LIMIT 1", h).Scan(&bn, &idx); err != nil {
				return 0, err
			}
			var got uint64
			err := c.conn.QueryRow(ctx, "SELECT count() FROM transactions WHERE chain_id = 'a' AND block_number IN (?) AND (block_number, tx_index) IN ((?, ?))", bn, bn, idx).Scan(&got)
			return got, err
		}
		projected := func(h string) (uint64, error) {
			var got uint64
			err := c.conn.QueryRow(ctx, "SELECT count() FROM transactions WHERE chain_id = 'a' AND hash = ?", h).Scan(&got)
			return got, err
		}
		per := func(read func(string) (uint64, error)) time.Duration {
			start := time.Now()
			for _, h := range hashes {
				n, err := read(h)
				require.NoError(b, err)
				require.Equal(b, uint64(1), n, h)
			}
			return time.Since(start) / time.Duration(len(hashes))
		}
		b.ReportMetric(float64(per(lookup).Microseconds()), "byhash-lookup-table-us")
		// A ReplacingMergeTree refuses a projection unless its merges
		// rebuild it (deduplicate_merge_projection_mode, a table setting).
		timed("projection", "ALTER TABLE transactions MODIFY SETTING deduplicate_merge_projection_mode = 'rebuild'",
			"ALTER TABLE transactions ADD PROJECTION IF NOT EXISTS by_hash (SELECT * ORDER BY chain_id, hash)",
			"ALTER TABLE transactions MATERIALIZE PROJECTION by_hash SETTINGS mutations_sync = 1")
		b.ReportMetric(float64(per(projected).Microseconds()), "byhash-projection-us")
		b.Logf("%s: %d heights of %d transactions per chain", testCH.Engine, heights, benchTxs)
	}
}
