package storage

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/storage/schema"
)

// lookupTables are the tables WriteBlocks fills besides the main ones.
var lookupTables = []string{tableTxByHash, tableBlockByHash, tableBlockByTime, tableAddressTxs, tableAddressLogs}

// aLookup tells the inserts a write made before the look-up tables
// existed lacks: lookupTables and topic_heights (which has no tombstones,
// so it is not among the tables lookupTables' checks read).
func aLookup(table string) bool {
	return slices.Contains(lookupTables, table) || table == tableTopicHeights
}

// lookupView is what a reader of the look-up tables sees of one chain:
// every key whose newest row is canonical (FINAL, then is_canonical = 1),
// as text, sorted.
type lookupView struct {
	TxByHash    []string // hash@number/index:block_hash
	BlockByHash []string // hash@number
	BlockByTime []string // unix time@number
	AddressTxs  []string // address@number/index:hash from to creation
	AddressLogs []string // address@number/index:topic0
}

func readLookups(t *testing.T, c *ClickHouse, chainID string) lookupView {
	t.Helper()
	ctx := testContext(t)
	var v lookupView
	for _, q := range []struct {
		sql string
		out *[]string
	}{
		{"SELECT concat(hash, '@', toString(block_number), '/', toString(tx_index), ':', block_hash) FROM tx_by_hash FINAL" +
			" WHERE chain_id = ? AND is_canonical = 1", &v.TxByHash},
		{"SELECT concat(hash, '@', toString(number)) FROM block_by_hash FINAL WHERE chain_id = ? AND is_canonical = 1", &v.BlockByHash},
		{"SELECT concat(toString(toUInt32(timestamp)), '@', toString(number)) FROM block_by_time FINAL" +
			" WHERE chain_id = ? AND is_canonical = 1", &v.BlockByTime},
		{"SELECT concat(address, '@', toString(block_number), '/', toString(tx_index), ':', hash, ' '," +
			" toString(is_from), ' ', toString(is_to), ' ', toString(is_creation)) FROM address_txs FINAL" +
			" WHERE chain_id = ? AND is_canonical = 1", &v.AddressTxs},
		{"SELECT concat(address, '@', toString(block_number), '/', toString(log_index), ':', topic0) FROM address_logs FINAL" +
			" WHERE chain_id = ? AND is_canonical = 1", &v.AddressLogs},
	} {
		rows, err := c.conn.Query(ctx, q.sql, chainID)
		require.NoError(t, err)
		for rows.Next() {
			var s string
			require.NoError(t, rows.Scan(&s))
			*q.out = append(*q.out, s)
		}
		require.NoError(t, rows.Err())
		require.NoError(t, rows.Close())
		slices.Sort(*q.out)
	}
	return v
}

// wantLookups is the look-up view the blocks must give, from the rules of
// migrations 0010-0014 (written out here again, not taken from lookups.go).
func wantLookups(blocks ...*chaindata.BlockData) lookupView {
	var v lookupView
	b01 := func(b bool) int {
		if b {
			return 1
		}
		return 0
	}
	for _, d := range blocks {
		b := d.Block
		v.BlockByHash = append(v.BlockByHash, fmt.Sprintf("%s@%d", b.Hash, b.Number))
		v.BlockByTime = append(v.BlockByTime, fmt.Sprintf("%d@%d", b.Timestamp, b.Number))
		for _, tx := range d.Transactions {
			v.TxByHash = append(v.TxByHash, fmt.Sprintf("%s@%d/%d:%s", tx.Hash, tx.BlockNumber, tx.Index, tx.BlockHash))
			seen := map[string]bool{}
			for _, a := range []string{tx.From, tx.To, tx.ContractAddress} {
				if a == "" || seen[a] {
					continue
				}
				seen[a] = true
				v.AddressTxs = append(v.AddressTxs, fmt.Sprintf("%s@%d/%d:%s %d %d %d", a, tx.BlockNumber, tx.Index, tx.Hash,
					b01(a == tx.From), b01(a == tx.To), b01(a == tx.ContractAddress)))
			}
		}
		for _, l := range d.Logs {
			topic0 := ""
			if len(l.Topics) > 0 {
				topic0 = l.Topics[0]
			}
			v.AddressLogs = append(v.AddressLogs, fmt.Sprintf("%s@%d/%d:%s", l.Address, l.BlockNumber, l.LogIndex, topic0))
		}
	}
	for _, s := range []*[]string{&v.TxByHash, &v.BlockByHash, &v.BlockByTime, &v.AddressTxs, &v.AddressLogs} {
		slices.Sort(*s)
	}
	return v
}

// tombstones counts the tombstone rows of each look-up table on disk (with
// merges stopped, every one written is still there).
func tombstones(t *testing.T, c *ClickHouse, chainID string) map[string]uint64 {
	t.Helper()
	out := map[string]uint64{}
	for _, table := range lookupTables {
		var n uint64
		require.NoError(t, c.conn.QueryRow(testContext(t),
			"SELECT count() FROM "+table+" WHERE chain_id = ? AND is_canonical = 0", chainID).Scan(&n))
		out[table] = n
	}
	return out
}

// selfTransferBlock is sampleBlock whose first transaction is sent to its
// own sender.
func selfTransferBlock(n uint64) *chaindata.BlockData {
	d := sampleBlock(n)
	d.Transactions[0].To = d.Transactions[0].From
	return d
}

// The look-up rows of written blocks are exactly what the main tables
// hold: every transaction by its hash, every address's transactions (a
// self-transfer once with both flags, a creation under its sender and its
// contract, never under an empty recipient), every log by its address,
// every block by hash and by time.
func TestLookupsMatchTheMainTables(t *testing.T) {
	c := openTest(t)
	ctx := testContext(t)
	blocks := append(mixBlocks(999_990, 20, 3, 2), sampleBlock(2_000_000), selfTransferBlock(2_000_001), mixBlock(2_000_002, 0, 0))
	require.NoError(t, c.WriteBlocks(ctx, "1", blocks))

	// What the main tables say, read back through the documented read.
	var stored []*chaindata.BlockData
	for _, d := range blocks {
		stored = append(stored, readBlockData(t, c, "1", d.Block.Number))
	}
	got := readLookups(t, c, "1")
	require.Equal(t, wantLookups(stored...), got)
	require.Equal(t, wantLookups(blocks...), got)
	require.Len(t, got.TxByHash, 20*3+2+2)
	require.Contains(t, got.AddressTxs, fmt.Sprintf("%s@2000001/0:%s 1 1 0", "0x00000000000000000000000000000000000000f0", hash('a', 20_000_010)))
	require.Contains(t, got.AddressTxs, fmt.Sprintf("%s@2000000/1:%s 0 0 1", "0x00000000000000000000000000000000000000c1", hash('a', 20_000_001)))

	// Look-ups as a reader makes them, checked against the main row.
	for _, d := range stored {
		for _, tx := range d.Transactions {
			var n uint64
			var idx uint32
			require.NoError(t, c.conn.QueryRow(ctx, "SELECT block_number, tx_index FROM tx_by_hash FINAL"+
				" WHERE chain_id = ? AND hash = ? AND is_canonical = 1 ORDER BY block_number LIMIT 1", "1", tx.Hash).Scan(&n, &idx))
			require.Equal(t, [2]uint64{tx.BlockNumber, uint64(tx.Index)}, [2]uint64{n, uint64(idx)}, tx.Hash)
		}
		var n uint64
		require.NoError(t, c.conn.QueryRow(ctx, "SELECT number FROM block_by_hash FINAL WHERE chain_id = ? AND hash = ? AND is_canonical = 1",
			"1", d.Block.Hash).Scan(&n))
		require.Equal(t, d.Block.Number, n)
		require.NoError(t, c.conn.QueryRow(ctx, "SELECT number FROM block_by_time FINAL WHERE chain_id = ?"+
			" AND timestamp = toDateTime(?) AND is_canonical = 1", "1", d.Block.Timestamp).Scan(&n))
		require.Equal(t, d.Block.Number, n, "the block of its own time")
	}
	var logs uint64
	require.NoError(t, c.conn.QueryRow(ctx, "SELECT count() FROM address_logs FINAL WHERE chain_id = ? AND address = ?"+
		" AND topic0 = ? AND block_number BETWEEN 999990 AND 2000002 AND is_canonical = 1",
		"1", fmt.Sprintf("0x%040x", 0xe1), hash('c', 1)).Scan(&logs))
	require.Equal(t, uint64(20*3), logs, "the mix's second log of every transaction")
}

// forkWith is forkOf with the changes a reorg makes besides the count:
// hashes moved between positions, other addresses, another time.
func forkWith(n uint64, txs, logs int, change func(d *chaindata.BlockData)) *chaindata.BlockData {
	d := forkOf(n, txs, logs)
	change(d)
	return d
}

// A reorg rewrite (fewer transactions, other transactions at the same
// positions, a hash moved to another position, other addresses, another
// time, only the block hash changed) and a removed height leave exactly the
// canonical blocks' look-up rows visible, on unmerged parts and after a
// merge; rewriting the same blocks or removing again changes nothing; the
// orphaned block comes back whole when it is written again.
func TestLookupsFollowReorgsAndRemoveBlock(t *testing.T) {
	c := openFresh(t)
	require.NoError(t, c.Migrate(testContext(t)))
	stopMerges(t, c)
	ctx := testContext(t)
	old := []*chaindata.BlockData{sampleBlock(30), selfTransferBlock(31), sampleBlock(32), sampleBlock(33), sampleBlock(34)}
	require.NoError(t, c.WriteBlocks(ctx, "1", old))
	require.Equal(t, wantLookups(old...), readLookups(t, c, "1"))

	fork31 := forkWith(31, 1, 1, func(d *chaindata.BlockData) { d.Block.Timestamp += 5 }) // 2 txs, 3 logs → 1, 1; another time
	fork32 := forkWith(32, 2, 3, func(d *chaindata.BlockData) {
		d.Transactions[0].From = "0x00000000000000000000000000000000000000f9" // another sender at position 0
		d.Transactions[1].Hash = old[2].Transactions[0].Hash                  // the old position 0 mined again at 1
		d.Logs[1].Address = "0x00000000000000000000000000000000000000e9"
		d.Logs[0].TxHash, d.Logs[1].TxHash, d.Logs[2].TxHash = d.Transactions[0].Hash, d.Transactions[1].Hash, d.Transactions[1].Hash
	})
	fork33 := sampleBlock(33) // the same transactions and time in another block
	fork33.Block.Hash = hash('f', 33)
	for i := range fork33.Transactions {
		fork33.Transactions[i].BlockHash = fork33.Block.Hash
	}
	for i := range fork33.Logs {
		fork33.Logs[i].BlockHash = fork33.Block.Hash
	}
	require.NoError(t, c.WriteBlocks(ctx, "1", blocksOf(fork33, fork31, fork32)))
	require.NoError(t, c.RemoveBlock(ctx, "1", 34))

	want := wantLookups(old[0], fork31, fork32, fork33)
	require.Equal(t, want, readLookups(t, c, "1"))
	// Exactly the stale keys got a tombstone (see the comments for each):
	wantTombs := map[string]uint64{
		tableBlockByHash: 4, // the old hashes of 31, 32, 33 and the removed 34
		tableBlockByTime: 2, // 31 changed its time; 34 removed (32 and 33 kept theirs)
		tableTxByHash:    6, // 31: both old txs; 32: both (other hashes at 0 and 1); 34: both
		tableAddressTxs:  7, // 31: f2 and c1 of position 1; 32: f0, sender no more at 0; 34: f0, f1, f2, c1
		tableAddressLogs: 6, // 31: positions 1 and 2; 32: position 1's old address; 34: all three
	}
	require.Equal(t, wantTombs, tombstones(t, c, "1"))

	// A reader's look-ups: the hash mined again is found at its new
	// position; a hash of the orphaned block is not found; the orphaned
	// block's hash shows as orphaned (a tombstone), not as unknown.
	var n uint64
	var idx uint32
	require.NoError(t, c.conn.QueryRow(ctx, "SELECT block_number, tx_index FROM tx_by_hash FINAL"+
		" WHERE chain_id = ? AND hash = ? AND is_canonical = 1 ORDER BY block_number LIMIT 1", "1", old[2].Transactions[0].Hash).Scan(&n, &idx))
	require.Equal(t, [2]uint64{32, 1}, [2]uint64{n, uint64(idx)})
	require.NoError(t, c.conn.QueryRow(ctx, "SELECT count() FROM tx_by_hash FINAL WHERE chain_id = ? AND hash = ? AND is_canonical = 1",
		"1", old[1].Transactions[1].Hash).Scan(&n))
	require.Zero(t, n)
	var canon uint8
	require.NoError(t, c.conn.QueryRow(ctx, "SELECT is_canonical FROM block_by_hash FINAL WHERE chain_id = ? AND hash = ?",
		"1", old[1].Block.Hash).Scan(&canon))
	require.Equal(t, tombstone, canon)

	// The same writes again: nothing visible changes, no tombstone is added.
	require.NoError(t, c.WriteBlocks(ctx, "1", blocksOf(fork31, fork32, fork33)))
	require.NoError(t, c.RemoveBlock(ctx, "1", 34))
	require.Equal(t, want, readLookups(t, c, "1"))
	require.Equal(t, wantTombs, tombstones(t, c, "1"))

	// Merged, the view is the same.
	mergeFully(t, c, lookupTables...)
	require.Equal(t, want, readLookups(t, c, "1"))

	// The orphaned blocks come back (the chain reorganised back), and 34
	// gets a block again: every old key is canonical again, the forks' gone.
	require.NoError(t, c.WriteBlocks(ctx, "1", old[1:]))
	require.Equal(t, wantLookups(old...), readLookups(t, c, "1"))
}

// writeMainOnly writes blocks (and removes heights) the way the code before
// the look-up tables did: the same rows and tombstones in the main tables,
// nothing in the look-ups.
func writeMainOnly(t *testing.T, c *ClickHouse, chainID string, blocks []*chaindata.BlockData, remove ...uint64) {
	t.Helper()
	ctx := testContext(t)
	var heights []uint64
	for _, d := range blocks {
		heights = append(heights, d.Block.Number)
	}
	heights = append(heights, remove...)
	slices.Sort(heights)
	stale, err := c.stalePositions(ctx, chainID, chaindata.ToRanges(heights))
	require.NoError(t, err)
	sets := []*rowSet{}
	if len(blocks) > 0 {
		sets = append(sets, buildRows(chainID, blocks, stale, c.clock.next(), time.Now()))
	}
	for _, h := range remove {
		sets = append(sets, removalRows(chainID, h, stale[h], c.clock.next()))
	}
	for _, r := range sets {
		r.marks.legacy = c.beforeTraces
		for _, ins := range r.inserts() {
			if ins.n == 0 || aLookup(ins.stmt.table) {
				continue
			}
			require.NoError(t, c.insertColumns(ctx, ins.stmt, ins.n, ins.cols))
		}
	}
}

// The backfill migrations (0017-0021) turn data written before the look-up
// tables existed, reorganisations included, into the same look-up rows the
// write path makes; running them again changes nothing, and a later write
// (a reorg) supersedes backfilled rows, since they carry the version of
// their source rows. Migrate logs what each one does.
func TestBackfillMigrationsMatchTheWritePath(t *testing.T) {
	ctx := testContext(t)
	core, logs := observer.New(zap.InfoLevel)
	cfg := testConfig(t)
	cfg.Database += fmt.Sprintf("_%d", time.Now().UnixNano())
	c, err := Open(ctx, cfg, zap.New(core))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Close()) })
	ms, err := schema.Numbered()
	require.NoError(t, err)
	require.Equal(t, "0015_create_aggregates.sql", ms[14].Name)
	_, err = c.migrate(ctx, ms[:15])
	require.NoError(t, err)
	stopMerges(t, c) // every version stays on disk: the backfill must pick the newest
	// Written before the token transfer tables (0044-0046) and the traces
	// tables (0051-0053) exist, as a binary from then did; the writes after
	// the migrations have them.
	c.cfg.SkipTokenTransfers = true
	c.beforeTraces, c.beforeTopics = true, true

	// The same history on two chains: "old" through the main tables only,
	// "new" through WriteBlocks and RemoveBlock.
	old := append(mixBlocks(60, 5, 3, 2), sampleBlock(65), selfTransferBlock(66), sampleBlock(67))
	fork61 := forkWith(61, 1, 1, func(d *chaindata.BlockData) { d.Block.Timestamp++ })
	fork65 := forkWith(65, 2, 2, func(d *chaindata.BlockData) { d.Transactions[1].Hash = hash('a', 650) })
	writeMainOnly(t, c, "old", old)
	writeMainOnly(t, c, "old", blocksOf(fork61, fork65), 67)
	require.NoError(t, c.WriteBlocks(ctx, "new", old))
	require.NoError(t, c.WriteBlocks(ctx, "new", blocksOf(fork61, fork65)))
	require.NoError(t, c.RemoveBlock(ctx, "new", 67))
	require.Equal(t, lookupView{}, readLookups(t, c, "old"))

	applied, err := c.migrate(ctx, ms)
	require.NoError(t, err)
	c.cfg.SkipTokenTransfers = false
	c.beforeTraces, c.beforeTopics = false, false
	applied = slices.DeleteFunc(applied, func(f string) bool { return !strings.Contains(f, "_backfill_") || f > "0043" })
	require.Equal(t, []string{
		"0017_backfill_tx_by_hash.sql", "0018_backfill_block_by_hash.sql", "0019_backfill_block_by_time.sql",
		"0020_backfill_address_txs.sql", "0021_backfill_address_logs.sql",
	}, applied)
	canonical := []*chaindata.BlockData{old[0], fork61, old[2], old[3], old[4], fork65, old[6]}
	want := wantLookups(canonical...)
	require.Equal(t, want, readLookups(t, c, "old"))
	require.Equal(t, readLookups(t, c, "new"), readLookups(t, c, "old"), "backfill equals the write path")
	// topic_heights (0063) holds hints without tombstones: the backfill's
	// are the canonical logs' topics, and the write path's include them.
	require.Equal(t, wantTopicHeights(canonical...), readTopicHeights(t, c, "old"))
	require.Subset(t, readTopicHeights(t, c, "new"), wantTopicHeights(canonical...))

	// Each backfill said what it filled and how much it read.
	for _, f := range applied {
		filled := logs.FilterMessage("migration filled a table").FilterField(zap.String("migration", f)).All()
		require.Len(t, filled, 1, f)
		if testCH.Native() { // over HTTP no progress packets count the rows
			require.Positive(t, filled[0].ContextMap()["rows_read"], f)
		}
		require.Len(t, logs.FilterMessage("migration filling a table from indexed data; it reads the source table whole").
			FilterField(zap.String("migration", f)).All(), 1, f)
	}

	// Again (a crash between a file and its record): nothing changes.
	for _, m := range ms[15:] {
		if strings.Contains(m.Name, "_backfill_") {
			require.NoError(t, c.applyMigration(ctx, m))
		}
	}
	require.Equal(t, want, readLookups(t, c, "old"))

	// A later reorg of a backfilled height supersedes the backfilled rows.
	fork62 := forkWith(62, 1, 0, func(d *chaindata.BlockData) { d.Transactions[0].From = fmt.Sprintf("0x%040x", 0xabc) })
	require.NoError(t, c.WriteBlocks(ctx, "old", blocksOf(fork62)))
	canonical[2] = fork62
	require.Equal(t, wantLookups(canonical...), readLookups(t, c, "old"))
}

// A backfill runs under MigrateTimeout, not QueryTimeout, and says which
// key to raise when it is cut short.
func TestBackfillTimeoutNamesTheKey(t *testing.T) {
	ctx := testContext(t)
	c := openTest(t)
	require.NoError(t, c.WriteBlocks(ctx, "1", mixBlocks(0, 50, 20, 2)))
	ms, err := schema.Numbered()
	require.NoError(t, err)
	i := slices.IndexFunc(ms, func(m schema.File) bool { return m.Name == "0020_backfill_address_txs.sql" })
	require.GreaterOrEqual(t, i, 0)
	m := ms[i]

	c.cfg.QueryTimeout = time.Nanosecond // a DDL statement would fail at once
	require.NoError(t, c.applyMigration(ctx, m), "a backfill does not run under query_timeout")

	c.cfg.MigrateTimeout = time.Nanosecond
	err = c.applyMigration(ctx, m)
	require.ErrorContains(t, err, "filling address_txs")
	require.ErrorContains(t, err, "clickhouse.migrate_timeout 1ns")
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

// The look-up rows leave buildRows in their tables' key order, so the
// server has nothing to sort, tombstones included; every column moved
// with its key (each row still names its own transaction or log).
func TestLookupRowsAreInKeyOrder(t *testing.T) {
	blocks := mixBlocks(100, 30, 20, 2)
	slices.Reverse(blocks) // a range hands them newest first
	old := sampleBlock(110)
	stale := map[uint64]storedPositions{110: {
		block: &storedBlock{hash: old.Block.Hash, timestamp: uint32(old.Block.Timestamp) + 1},
		txs: map[uint32]storedTx{
			0:  {hash: old.Transactions[0].Hash, from: "0xffff", to: "0x0001"},
			25: {hash: old.Transactions[1].Hash, from: "0x0000"},
		},
		logs: map[uint32]storedLog{77: {address: "0x"}},
	}}
	r := buildRows("1", blocks, stale, 7, time.Now())
	l := &r.lookups
	require.Equal(t, 30*20+2, l.txByHash.len(), "plus two tombstones")
	require.Equal(t, 30*40+1, l.addressLogs.len(), "plus one tombstone")

	type key struct {
		s string
		n uint64
		i uint32
	}
	ordered := func(name string, keys []key) {
		require.True(t, slices.IsSortedFunc(keys, func(a, b key) int {
			return cmp.Or(strings.Compare(a.s, b.s), cmp.Compare(a.n, b.n), cmp.Compare(a.i, b.i))
		}), name)
	}
	var k []key
	for i := range l.txByHash.len() {
		k = append(k, key{l.txByHash.hash[i], l.txByHash.blockNumber[i], l.txByHash.txIndex[i]})
		if l.txByHash.canonical[i] == canonical {
			d := mixBlock(l.txByHash.blockNumber[i], 20, 2)
			require.Equal(t, d.Transactions[l.txByHash.txIndex[i]].Hash, l.txByHash.hash[i])
		}
	}
	ordered(tableTxByHash, k)
	k = nil
	for i := range l.addressTxs.len() {
		k = append(k, key{l.addressTxs.address[i], l.addressTxs.blockNumber[i], l.addressTxs.txIndex[i]})
		if l.addressTxs.canonical[i] == canonical {
			tx := mixBlock(l.addressTxs.blockNumber[i], 20, 2).Transactions[l.addressTxs.txIndex[i]]
			require.Equal(t, tx.Hash, l.addressTxs.hash[i])
			require.Equal(t, flag(tx.From == l.addressTxs.address[i]), l.addressTxs.isFrom[i])
		}
	}
	ordered(tableAddressTxs, k)
	k = nil
	for i := range l.addressLogs.len() {
		k = append(k, key{l.addressLogs.address[i], l.addressLogs.blockNumber[i], l.addressLogs.logIndex[i]})
	}
	ordered(tableAddressLogs, k)
	k = nil
	for i := range l.blockByHash.len() {
		k = append(k, key{l.blockByHash.hash[i], l.blockByHash.number[i], 0})
	}
	ordered(tableBlockByHash, k)
	k = nil
	for i := range l.blockByTime.len() {
		k = append(k, key{fmt.Sprintf("%020d", l.blockByTime.timestamp[i]), l.blockByTime.number[i], 0})
	}
	ordered(tableBlockByTime, k)
	require.Equal(t, 30+1, l.blockByTime.len(), "the stale block's other time is tombstoned")
}
