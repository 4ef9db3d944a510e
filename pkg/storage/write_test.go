package storage

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/internal/testkit"
	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/storage/schema"
)

// mixBlock is a deterministic block of the default mix of issue 8: txs
// transactions with logsPerTx logs each, from a node's answer of about
// 61 KB for 20 transactions with 2 logs each. The Raw fields are shaped as
// the decoder makes them (pkg/rpc/columns.go): what no column holds, such as
// calldata and signatures; a bloom the logs make is left out. Every field
// depends on n, so a row written under the wrong height shows.
func mixBlock(n uint64, txs, logsPerTx int) *chaindata.BlockData {
	bh := hash('b', n)
	d := &chaindata.BlockData{
		Block: chaindata.Block{
			Number: n, Hash: bh, ParentHash: hash('b', n-1), Timestamp: 1_700_000_000 + n*2,
			Miner: "0x00000000000000000000000000000000000000c0", GasUsed: 21_000 * uint64(txs), GasLimit: 30_000_000,
			BaseFeePerGas: "7000000001", Size: 60_000, TxCount: uint32(txs), LogCount: uint32(txs * logsPerTx),
		},
		Transactions: make([]chaindata.Transaction, 0, txs),
		Logs:         make([]chaindata.Log, 0, txs*logsPerTx),
	}
	d.Block.Raw = []byte(fmt.Sprintf(`{"extraData":"0x","logsBloom":"0x%0512x","mixHash":"%s","receiptsRoot":"%s","stateRoot":"%s","transactionsRoot":"%s"}`,
		n, hash('d', n), hash('e', n), hash('f', n), hash('7', n)))
	for i := range txs {
		th := hash('a', n*1000+uint64(i))
		input := strings.Repeat(fmt.Sprintf("%08x", n+uint64(i)), 110) // 880 bytes of calldata
		d.Transactions = append(d.Transactions, chaindata.Transaction{
			BlockNumber: n, BlockHash: bh, Index: uint32(i), Hash: th, Type: uint64(i % 3),
			From: fmt.Sprintf("0x%040x", n*7+uint64(i)), To: fmt.Sprintf("0x%040x", uint64(i)),
			Value: "1000000000000000000", Nonce: n + uint64(i), Gas: 90_000, GasPrice: "7000000002",
			Status: 1, GasUsed: 21_000, EffectiveGasPrice: "7000000002", LogCount: uint32(logsPerTx),
			Raw:        []byte(fmt.Sprintf(`{"chainId":"0x1","input":"0x%s","r":"0x%064x","s":"0x%064x","v":"0x1"}`, input, n, i)),
			ReceiptRaw: []byte(fmt.Sprintf(`{"cumulativeGasUsed":"0x%x"}`, 21_000*(i+1))),
		})
		for j := range logsPerTx {
			li := uint32(i*logsPerTx + j)
			data := fmt.Sprintf("0x%0128x", n*100+uint64(li))
			d.Logs = append(d.Logs, chaindata.Log{
				BlockNumber: n, BlockHash: bh, TxHash: th, TxIndex: uint32(i), LogIndex: li,
				Address: fmt.Sprintf("0x%040x", 0xe0+uint64(j)),
				Topics:  []string{hash('c', uint64(j)), hash('c', n), hash('c', uint64(li))},
				Data:    data,
				Raw:     []byte(`{"removed":false}`),
			})
		}
	}
	return d
}

func mixBlocks(from uint64, n, txs, logsPerTx int) []*chaindata.BlockData {
	out := make([]*chaindata.BlockData, n)
	for i := range out {
		out[i] = mixBlock(from+uint64(i), txs, logsPerTx)
	}
	return out
}

// The mix is what the issue measures with: a node's answer of about 61 KB
// per block, of which the Raw fields keep about 23 KB (mostly calldata and
// signatures; see mixBlock).
func TestMixBlockSize(t *testing.T) {
	d := mixBlock(1234, 20, 2)
	size := len(d.Block.Raw)
	for _, tx := range d.Transactions {
		size += len(tx.Raw) + len(tx.ReceiptRaw)
	}
	for _, l := range d.Logs {
		size += len(l.Raw)
	}
	require.InDelta(t, 23_500, size, 2_000)
	require.NoError(t, checkBlockData(d))
}

// N heights in one call store exactly what N calls of one height store.
func TestWriteBlocksBatchEqualsSingleWrites(t *testing.T) {
	c := openTest(t)
	ctx := testContext(t)
	blocks := mixBlocks(1_000_000-5, 10, 3, 2) // crosses a partition boundary
	blocks = append(blocks, sampleBlock(2_000_000))
	empty := mixBlock(2_000_001, 0, 0)
	blocks = append(blocks, empty)

	require.NoError(t, c.WriteBlocks(ctx, "batch", blocks))
	for _, d := range blocks {
		require.NoError(t, c.WriteBlocks(ctx, "single", blocksOf(d)))
	}

	for _, d := range blocks {
		n := d.Block.Number
		batch, single := readBlockData(t, c, "batch", n), readBlockData(t, c, "single", n)
		require.Equal(t, single, batch, "height %d", n)
		require.Equal(t, d.Block, batch.Block)
		require.Equal(t, len(d.Transactions), len(batch.Transactions))
		require.Equal(t, len(d.Logs), len(batch.Logs))
	}
	for _, chainID := range []string{"batch", "single"} {
		blocksN, txs, logs := testkit.CountRows(t, testCH.Addr, c.cfg.Database, chainID)
		require.Equal(t, [3]uint64{12, 10*3 + 2, 10*6 + 3}, [3]uint64{blocksN, txs, logs}, chainID)
		counts, err := c.CountIndexed(ctx, chainID, []chaindata.HeightRange{{From: 0, To: 3_000_000}})
		require.NoError(t, err)
		require.Equal(t, []uint64{12}, counts, chainID)
	}
	// The marks carry each height's hash.
	var marks []struct {
		N uint64 `ch:"number"`
		H string `ch:"hash"`
	}
	require.NoError(t, c.conn.Select(ctx, &marks, "SELECT number, hash FROM indexed_heights WHERE chain_id = 'batch' ORDER BY number"))
	require.Len(t, marks, len(blocks))
	for i, d := range blocks {
		require.Equal(t, d.Block.Number, marks[i].N)
		require.Equal(t, d.Block.Hash, marks[i].H)
	}
}

// Rewriting a range where some heights held a block with more transactions
// or logs tombstones exactly the positions the new blocks lack, and nothing
// else: with merges stopped, the tombstones are counted on disk.
func TestWriteBlocksRewriteRangeTombstonesExactlyTheStalePositions(t *testing.T) {
	c := openFresh(t)
	require.NoError(t, c.Migrate(testContext(t)))
	stopMerges(t, c)
	ctx := testContext(t)

	// Heights 10-17 hold sampleBlock: 2 txs, 3 logs each.
	var first []*chaindata.BlockData
	for n := uint64(10); n <= 17; n++ {
		first = append(first, sampleBlock(n))
	}
	require.NoError(t, c.WriteBlocks(ctx, "1", first))

	// The rewrite covers 10-18 (18 is new): some heights lose rows, some
	// keep the same block, one goes empty.
	second := []*chaindata.BlockData{
		sampleBlock(10),  // same block: no tombstone
		forkOf(11, 1, 1), // -1 tx, -2 logs
		forkOf(12, 2, 3), // other block, same positions: no tombstone
		forkOf(13, 0, 0), // -2 txs, -3 logs
		sampleBlock(14),
		forkOf(15, 1, 2), // -1 tx, -1 log
		sampleBlock(16),
		sampleBlock(17),
		forkOf(18, 1, 1), // fresh height
	}
	second[3].Block.Hash = hash('g', 13)
	wantTxTomb, wantLogTomb := uint64(1+2+1), uint64(2+3+1)
	require.NoError(t, c.WriteBlocks(ctx, "1", second))

	for _, d := range second {
		require.Equal(t, viewOf(d), readCanonical(t, c, "1", d.Block.Number), "height %d", d.Block.Number)
	}
	var txTomb, logTomb uint64
	require.NoError(t, c.conn.QueryRow(ctx, "SELECT count() FROM transactions WHERE chain_id = '1' AND is_canonical = 0").Scan(&txTomb))
	require.NoError(t, c.conn.QueryRow(ctx, "SELECT count() FROM logs WHERE chain_id = '1' AND is_canonical = 0").Scan(&logTomb))
	require.Equal(t, wantTxTomb, txTomb)
	require.Equal(t, wantLogTomb, logTomb)
	// Exactly which positions: the tombstones of 11 are tx 1 and logs 1-2.
	var tombs []string
	rows, err := c.conn.Query(ctx, "SELECT concat(toString(block_number), '/', toString(log_index), '@', block_hash) FROM logs"+
		" WHERE chain_id = '1' AND is_canonical = 0 ORDER BY block_number, log_index")
	require.NoError(t, err)
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		tombs = append(tombs, s)
	}
	require.NoError(t, rows.Err())
	require.NoError(t, rows.Close())
	b := func(n uint64) string { return hash('b', n) }
	require.Equal(t, []string{
		"11/1@" + b(11), "11/2@" + b(11),
		"13/0@" + b(13), "13/1@" + b(13), "13/2@" + b(13),
		"15/2@" + b(15),
	}, tombs, "each tombstone names the superseded row's block")

	// Writing the same range again adds no tombstone: nothing is stale.
	require.NoError(t, c.WriteBlocks(ctx, "1", second))
	require.NoError(t, c.conn.QueryRow(ctx, "SELECT count() FROM logs WHERE chain_id = '1' AND is_canonical = 0").Scan(&logTomb))
	require.Equal(t, wantLogTomb, logTomb)
	for _, d := range second {
		require.Equal(t, viewOf(d), readCanonical(t, c, "1", d.Block.Number), "height %d", d.Block.Number)
	}
}

// Scattered heights (a reorg repair) read the span once and tombstone only
// their own heights, never one in between that the call does not write.
func TestWriteBlocksScatteredHeightsTouchOnlyTheirOwn(t *testing.T) {
	c := openFresh(t)
	require.NoError(t, c.Migrate(testContext(t)))
	stopMerges(t, c)
	ctx := testContext(t)
	require.NoError(t, c.WriteBlocks(ctx, "1", blocksOf(sampleBlock(20), sampleBlock(21), sampleBlock(22))))

	require.NoError(t, c.WriteBlocks(ctx, "1", blocksOf(forkOf(22, 1, 1), forkOf(20, 1, 1))))
	require.Equal(t, viewOf(forkOf(20, 1, 1)), readCanonical(t, c, "1", 20))
	require.Equal(t, viewOf(sampleBlock(21)), readCanonical(t, c, "1", 21))
	require.Equal(t, viewOf(forkOf(22, 1, 1)), readCanonical(t, c, "1", 22))
}

// The marks go last: a call that fails after its look-ups, transactions and
// logs are in (here the blocks table rejects the insert, a real server
// error) marks nothing, so the scheduler indexes the heights again.
func TestWriteBlocksFailingInTheMiddleMarksNothing(t *testing.T) {
	c := openFresh(t)
	require.NoError(t, c.Migrate(testContext(t)))
	ctx := testContext(t)
	blocks := mixBlocks(100, 1000, 2, 1)

	breakBlocksTable(t, c)
	err := c.WriteBlocks(ctx, "1", blocks)
	require.ErrorContains(t, err, `writing blocks for chain "1" heights 100-1099`)

	require.Equal(t, uint64(2000), rawCount(t, c, tableTransactions, "1"), "the failure came after the transactions")
	require.Equal(t, uint64(2000), rawCount(t, c, tableLogs, "1"))
	require.Equal(t, uint64(2000), rawCount(t, c, tableTxByHash, "1"), "and after the look-ups")
	require.Equal(t, uint64(1000), rawCount(t, c, tableBlockByHash, "1"))
	counts, err := c.CountIndexed(ctx, "1", []chaindata.HeightRange{{From: 0, To: 10_000}})
	require.NoError(t, err)
	require.Equal(t, []uint64{0}, counts, "no height is marked")

	// Once the table is back (its two migration files), the same call
	// completes and marks them all.
	ms, err := schema.Numbered()
	require.NoError(t, err)
	require.NoError(t, c.execSQL(ctx, "DROP TABLE "+tableBlocks))
	require.NoError(t, c.execSQL(ctx, ms[0].Stmt))
	require.NoError(t, c.execSQL(ctx, ms[5].Stmt))
	require.NoError(t, c.WriteBlocks(ctx, "1", blocks))
	counts, err = c.CountIndexed(ctx, "1", []chaindata.HeightRange{{From: 0, To: 10_000}})
	require.NoError(t, err)
	require.Equal(t, []uint64{1000}, counts)
}

// The marks come after the block rows: with indexed_heights made to reject
// the insert, the blocks are in and nothing is marked.
func TestWriteBlocksMarksAfterBlocks(t *testing.T) {
	c := openFresh(t)
	require.NoError(t, c.Migrate(testContext(t)))
	ctx := testContext(t)
	// A table of the wrong shape rejects the marks' columns.
	require.NoError(t, c.execSQL(ctx, "DROP TABLE "+tableIndexedHeights))
	require.NoError(t, c.execSQL(ctx, "CREATE TABLE "+tableIndexedHeights+" (chain_id String, number UInt64) ENGINE = MergeTree ORDER BY (chain_id, number)"))
	err := c.WriteBlocks(ctx, "1", mixBlocks(7, 3, 1, 1))
	require.ErrorContains(t, err, `writing indexed_heights for chain "1" heights 7-9`)
	var marks uint64
	require.NoError(t, c.conn.QueryRow(ctx, "SELECT count() FROM indexed_heights").Scan(&marks))
	require.Zero(t, marks)
	blocks, _, _ := testkit.CountRows(t, testCH.Addr, c.cfg.Database, "1")
	require.Equal(t, uint64(3), blocks, "the data went in before the marks")
}

// A call sends each table's rows in blocks of flushRows within one INSERT;
// the server squashes them into one part per table (with merges stopped,
// so no merge hides extra parts), and every row arrives.
func TestWriteBlocksOnePartPerTable(t *testing.T) {
	c := openFresh(t)
	require.NoError(t, c.Migrate(testContext(t)))
	stopMerges(t, c)
	ctx := testContext(t)
	blocks := mixBlocks(5000, 250, 20, 2) // 5,000 transactions and 10,000 logs: 2 and 3 blocks
	require.Greater(t, 250*40, 2*flushRows)
	require.NoError(t, c.WriteBlocks(ctx, "1", blocks))

	for table, want := range map[string]uint64{tableTransactions: 5000, tableLogs: 10_000, tableBlocks: 250, tableIndexedHeights: 250} {
		var parts uint64
		require.NoError(t, c.conn.QueryRow(ctx, "SELECT count() FROM system.parts WHERE database = ? AND table = ? AND active",
			c.cfg.Database, table).Scan(&parts))
		require.Equal(t, uint64(1), parts, table)
		require.Equal(t, want, rawCount(t, c, table, "1"), table)
	}
	for _, n := range []uint64{5000, 5123, 5249} {
		got := readBlockData(t, c, "1", n)
		require.Equal(t, mixBlock(n, 20, 2).Transactions, got.Transactions)
		require.Equal(t, mixBlock(n, 20, 2).Logs, got.Logs)
	}
}
