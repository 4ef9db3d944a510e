package storage

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"github.com/tideline-dev/tideline/internal/testkit"
	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/storage/schema"
)

// openFresh is openTest on a database new to this run, so the tests also
// hold with -count > 1 on the package's one server.
func openFresh(t *testing.T) *ClickHouse {
	t.Helper()
	ctx := testContext(t)
	cfg := testConfig(t)
	cfg.Database += fmt.Sprintf("_%d", time.Now().UnixNano())
	c, err := Open(ctx, cfg, zaptest.NewLogger(t))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Close()) })
	return c
}

// canonicalView is what a reader sees of one height through the documented
// read: FINAL, then is_canonical = 1.
type canonicalView struct {
	Blocks []string // hash per block row
	Txs    []string // "index:hash@block_hash" in index order
	Logs   []string // "index:tx_hash@block_hash" in index order
}

func readCanonical(t *testing.T, c *ClickHouse, chainID string, n uint64) canonicalView {
	t.Helper()
	ctx := testContext(t)
	var v canonicalView
	for _, q := range []struct {
		sql string
		out *[]string
	}{
		{"SELECT hash FROM blocks FINAL WHERE chain_id = ? AND number = ? AND is_canonical = 1", &v.Blocks},
		{"SELECT concat(toString(tx_index), ':', hash, '@', block_hash) FROM transactions FINAL" +
			" WHERE chain_id = ? AND block_number = ? AND is_canonical = 1 ORDER BY tx_index", &v.Txs},
		{"SELECT concat(toString(log_index), ':', tx_hash, '@', block_hash) FROM logs FINAL" +
			" WHERE chain_id = ? AND block_number = ? AND is_canonical = 1 ORDER BY log_index", &v.Logs},
	} {
		rows, err := c.conn.Query(ctx, q.sql, chainID, n)
		require.NoError(t, err)
		for rows.Next() {
			var s string
			require.NoError(t, rows.Scan(&s))
			*q.out = append(*q.out, s)
		}
		require.NoError(t, rows.Err())
		require.NoError(t, rows.Close())
	}
	return v
}

// viewOf is what readCanonical must return for data.
func viewOf(d *chaindata.BlockData) canonicalView {
	v := canonicalView{Blocks: []string{d.Block.Hash}}
	for _, tx := range d.Transactions {
		v.Txs = append(v.Txs, fmt.Sprintf("%d:%s@%s", tx.Index, tx.Hash, tx.BlockHash))
	}
	for _, l := range d.Logs {
		v.Logs = append(v.Logs, fmt.Sprintf("%d:%s@%s", l.LogIndex, l.TxHash, l.BlockHash))
	}
	return v
}

// forkOf is sampleBlock(n) on another branch, keeping its first txs
// transactions and first logs logs (renumbered from 0).
func forkOf(n uint64, txs, logs int) *chaindata.BlockData {
	d := sampleBlock(n)
	d.Block.Hash = hash('f', n)
	d.Transactions = d.Transactions[:txs]
	d.Logs = d.Logs[:logs]
	for i := range d.Transactions {
		d.Transactions[i].BlockHash = d.Block.Hash
		d.Transactions[i].Hash = hash('e', n*10+uint64(i))
	}
	for i := range d.Logs {
		d.Logs[i].BlockHash = d.Block.Hash
		d.Logs[i].LogIndex = uint32(i)
		d.Logs[i].TxIndex = 0
		d.Logs[i].TxHash = d.Transactions[0].Hash
	}
	d.Block.TxCount, d.Block.LogCount = uint32(txs), uint32(logs)
	return d
}

// The known subtlety: rewriting a height with fewer transactions and logs
// must not leave the old block's higher positions visible. With merges
// stopped, every version stays on disk, so the read is proven on unmerged
// parts; then again after a merge.
func TestWriteBlocksWithFewerRowsShowsOnlyTheNewBlock(t *testing.T) {
	c := openFresh(t)
	require.NoError(t, c.Migrate(testContext(t)))
	stopMerges(t, c)
	ctx := testContext(t)
	for _, n := range []uint64{4, 5, 6} {
		require.NoError(t, c.WriteBlocks(ctx, "1", blocksOf(sampleBlock(n))))
	}
	old := sampleBlock(5)
	require.Equal(t, viewOf(old), readCanonical(t, c, "1", 5))

	fork := forkOf(5, 1, 1) // 2 txs, 3 logs → 1 tx, 1 log
	require.NoError(t, c.WriteBlocks(ctx, "1", blocksOf(fork)))
	require.Equal(t, viewOf(fork), readCanonical(t, c, "1", 5))
	require.Equal(t, fork.Block, readBlockData(t, c, "1", 5).Block)

	// The neighbours are untouched, and logical counts skip tombstones.
	require.Equal(t, viewOf(sampleBlock(4)), readCanonical(t, c, "1", 4))
	require.Equal(t, viewOf(sampleBlock(6)), readCanonical(t, c, "1", 6))
	blocks, txs, logs := testkit.CountRows(t, testCH.Addr, c.cfg.Database, "1")
	require.Equal(t, [3]uint64{3, 2 + 1 + 2, 3 + 1 + 3}, [3]uint64{blocks, txs, logs})
	require.Equal(t, uint64(6+2), rawCount(t, c, tableTransactions, "1"), "the rewrite adds 1 canonical row and 1 tombstone")

	// The mark carries the new hash; the block comparison sees the new block.
	var markHash string
	require.NoError(t, c.conn.QueryRow(ctx, "SELECT argMax(hash, version) FROM indexed_heights WHERE chain_id = ? AND number = ?",
		"1", uint64(5)).Scan(&markHash))
	require.Equal(t, fork.Block.Hash, markHash)
	stored, err := c.StoredBlocks(ctx, "1", 0, 10)
	require.NoError(t, err)
	require.Equal(t, []chaindata.StoredBlock{
		{Number: 4, Hash: hash('b', 4), ParentHash: hash('b', 3), Canonical: true},
		{Number: 5, Hash: fork.Block.Hash, ParentHash: hash('b', 4), Canonical: true},
		{Number: 6, Hash: hash('b', 6), ParentHash: hash('b', 5), Canonical: true},
	}, stored)

	// Down to nothing, then back to the original: tombstoned positions
	// become canonical again when a later block has them.
	empty := forkOf(5, 0, 0)
	empty.Block.Hash = hash('g', 5)
	require.NoError(t, c.WriteBlocks(ctx, "1", blocksOf(empty)))
	require.Equal(t, canonicalView{Blocks: []string{empty.Block.Hash}}, readCanonical(t, c, "1", 5))
	require.NoError(t, c.WriteBlocks(ctx, "1", blocksOf(old)))
	require.Equal(t, viewOf(old), readCanonical(t, c, "1", 5))

	require.NoError(t, c.WriteBlocks(ctx, "1", blocksOf(fork)))
	mergeFully(t, c, tableBlocks, tableTransactions, tableLogs)
	require.Equal(t, viewOf(fork), readCanonical(t, c, "1", 5))
	require.Equal(t, uint64(2+2+2), rawCount(t, c, tableTransactions, "1"), "merged: one row per key, tombstone included")
}

// A late write of the orphaned block (a slow activity) makes it visible
// again, with all its rows; the next rewrite of the fork repairs the height.
func TestWriteBlocksRepairsAStaleWrite(t *testing.T) {
	c := openFresh(t)
	require.NoError(t, c.Migrate(testContext(t)))
	stopMerges(t, c)
	ctx := testContext(t)
	fork := forkOf(8, 1, 2)
	require.NoError(t, c.WriteBlocks(ctx, "1", blocksOf(fork)))
	require.NoError(t, c.WriteBlocks(ctx, "1", blocksOf(sampleBlock(8)))) // a late write of the orphaned block
	require.Equal(t, viewOf(sampleBlock(8)), readCanonical(t, c, "1", 8))
	require.NoError(t, c.WriteBlocks(ctx, "1", blocksOf(fork)))
	require.Equal(t, viewOf(fork), readCanonical(t, c, "1", 8))
}

func TestRemoveBlockHidesEveryRowAndKeepsTheMark(t *testing.T) {
	c := openFresh(t)
	require.NoError(t, c.Migrate(testContext(t)))
	stopMerges(t, c)
	ctx := testContext(t)
	require.NoError(t, c.WriteBlocks(ctx, "1", blocksOf(sampleBlock(9))))
	require.NoError(t, c.WriteBlocks(ctx, "1", blocksOf(sampleBlock(10))))

	require.NoError(t, c.RemoveBlock(ctx, "1", 10))
	require.Equal(t, canonicalView{}, readCanonical(t, c, "1", 10))
	require.Equal(t, viewOf(sampleBlock(9)), readCanonical(t, c, "1", 9))
	stored, err := c.StoredBlocks(ctx, "1", 10, 10)
	require.NoError(t, err)
	require.Equal(t, []chaindata.StoredBlock{{Number: 10, Hash: hash('b', 10), ParentHash: hash('b', 9), Canonical: false}}, stored)
	hashes := testkit.BlockHashes(t, testCH.Addr, c.cfg.Database, "1", 0, 20)
	require.Equal(t, map[uint64]string{9: hash('b', 9)}, hashes)
	ok, err := c.IsIndexed(ctx, "1", 10)
	require.NoError(t, err)
	require.True(t, ok, "the mark stays; the check near the head repairs the height")
	blocks, txs, logs := testkit.CountRows(t, testCH.Addr, c.cfg.Database, "1")
	require.Equal(t, [3]uint64{1, 2, 3}, [3]uint64{blocks, txs, logs})

	// Removing again writes nothing new; rewriting brings a block back.
	before := rawCount(t, c, tableLogs, "1")
	require.NoError(t, c.RemoveBlock(ctx, "1", 10))
	require.Equal(t, before, rawCount(t, c, tableLogs, "1"))
	fork := forkOf(10, 2, 3)
	require.NoError(t, c.WriteBlocks(ctx, "1", blocksOf(fork)))
	require.Equal(t, viewOf(fork), readCanonical(t, c, "1", 10))
}

// writeWithoutCanonical writes a block the way the code before migrations
// 0006-0008 did: the same rows without the is_canonical column.
func writeWithoutCanonical(t *testing.T, c *ClickHouse, chainID string, d *chaindata.BlockData) {
	t.Helper()
	r := buildRows(chainID, blocksOf(d), nil, c.clock.next(), time.Now())
	for _, ins := range []struct {
		stmt insertStmt
		n    int
		cols []any
	}{
		{insertStmt{tableTransactions, transactionColumns}, r.txs.len(), r.txs.columns()},
		{insertStmt{tableLogs, logColumns}, r.logs.len(), r.logs.columns()},
		{insertStmt{tableBlocks, blockColumns}, r.blocks.len(), r.blocks.columns()},
	} {
		cols := ins.cols[:len(ins.cols)-1] // is_canonical is the last column
		require.NoError(t, c.insertColumns(testContext(t), ins.stmt, ins.n, cols))
	}
}

// Rows written before migrations 0006-0008 read as canonical, and the
// ADD COLUMN files are safe to run again after a crash between a file and
// its record (18.16 has no ADD COLUMN IF NOT EXISTS).
func TestIsCanonicalMigrationsKeepOldRowsAndRepeatSafely(t *testing.T) {
	ctx := testContext(t)
	c := openFresh(t)
	ms, err := schema.Numbered()
	require.NoError(t, err)
	require.Equal(t, "0006_add_blocks_is_canonical.sql", ms[5].Name)

	_, err = c.migrate(ctx, ms[:5])
	require.NoError(t, err)
	writeWithoutCanonical(t, c, "1", sampleBlock(3))

	_, err = c.migrate(ctx, ms[:7])
	require.NoError(t, err)
	// 0008 ran but was not recorded.
	require.NoError(t, c.execSQL(ctx, ms[7].Stmt))
	applied, err := c.migrate(ctx, ms[:8])
	require.NoError(t, err)
	require.Equal(t, []string{"0008_add_logs_is_canonical.sql"}, applied)
	_, err = c.migrate(ctx, ms)
	require.NoError(t, err)

	require.Equal(t, viewOf(sampleBlock(3)), readCanonical(t, c, "1", 3))
	blocks, txs, logs := testkit.CountRows(t, testCH.Addr, c.cfg.Database, "1")
	require.Equal(t, [3]uint64{1, 2, 3}, [3]uint64{blocks, txs, logs})
	require.NoError(t, c.WriteBlocks(ctx, "1", blocksOf(forkOf(3, 1, 1))))
	require.Equal(t, viewOf(forkOf(3, 1, 1)), readCanonical(t, c, "1", 3))
}
