package storage

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/chaindata"
)

func insertRows(t *testing.T, c *ClickHouse, table string, cols []string, rows ...[]any) {
	t.Helper()
	require.NoError(t, c.insert(testContext(t), insertStmt{table, cols}, rows))
}

func TestReadMainTables(t *testing.T) {
	c := openTest(t)
	ctx := testContext(t)
	const chainID = "r1"
	in := []*chaindata.BlockData{sampleBlock(10), sampleBlock(11), sampleBlock(12)}
	require.NoError(t, c.WriteBlocks(ctx, chainID, in))
	require.NoError(t, c.WriteBlocks(ctx, "other", blocksOf(sampleBlock(11))))

	blocks, err := c.Reader().BlocksInRange(ctx, chainID, 10, 12)
	require.NoError(t, err)
	require.Equal(t, []chaindata.Block{in[0].Block, in[1].Block, in[2].Block}, blocks, "every column read back")

	blocks, err = c.Reader().BlocksAt(ctx, chainID, []uint64{12, 10, 99})
	require.NoError(t, err)
	require.Equal(t, []chaindata.Block{in[0].Block, in[2].Block}, blocks)

	txs, err := c.Reader().BlockTransactions(ctx, chainID, 11, 1, 10)
	require.NoError(t, err)
	require.Equal(t, []chaindata.Transaction{in[1].Transactions[1]}, txs)

	txs, err = c.Reader().TransactionsAt(ctx, chainID, []Position{{12, 0}, {10, 1}, {13, 0}, {11, 7}})
	require.NoError(t, err)
	require.Equal(t, []chaindata.Transaction{in[0].Transactions[1], in[2].Transactions[0]}, txs)

	receipts, err := c.Reader().RPC().ReceiptTxsAt(ctx, chainID, []Position{{12, 0}, {10, 1}, {13, 0}, {11, 7}})
	require.NoError(t, err)
	require.Len(t, receipts, 2)
	for i, tx := range receipts {
		require.NotEmpty(t, txs[i].Raw, "the sample has a transaction's own JSON to leave out")
		require.NotZero(t, txs[i].Nonce, "the sample has a nonce to leave out")
		want := txs[i]
		require.Empty(t, tx.Raw, "raw left out")
		want.Raw, want.Value, want.Nonce, want.Gas, want.GasPrice, want.LogCount = tx.Raw, "", 0, 0, "", 0
		require.Equal(t, want, tx, "what a receipt uses read back, the rest left out")
	}

	// A transfer listing's read: what it takes from the transaction read
	// back, the rest (hashes, addresses, type, value, status, contract
	// and log count) left at their zero values.
	forTransfers, err := c.Reader().Tokens().TransferTxsAt(ctx, chainID, []Position{{12, 0}, {10, 1}, {13, 0}, {11, 7}})
	require.NoError(t, err)
	require.Len(t, forTransfers, 2)
	for i, tx := range forTransfers {
		require.NotEmpty(t, txs[i].Hash, "the sample has a hash to leave out")
		require.NotEmpty(t, txs[i].Raw, "the sample has a transaction's own JSON (its input) to read")
		want := txs[i]
		want.BlockHash, want.Hash, want.Type, want.From, want.To, want.Value = "", "", 0, "", "", ""
		want.Status, want.ContractAddress, want.LogCount = 0, "", 0
		require.Equal(t, want, tx, "what a transfer listing uses read back, the rest left out")
	}

	logs, err := c.Reader().TxLogs(ctx, chainID, Position{11, 1})
	require.NoError(t, err)
	require.Equal(t, in[1].Logs[1:], logs)

	times, err := c.Reader().BlockTimes(ctx, chainID, []uint64{12, 10, 99})
	require.NoError(t, err)
	require.Equal(t, map[uint64]BlockTime{
		10: {in[0].Block.Hash, in[0].Block.Timestamp}, 12: {in[2].Block.Hash, in[2].Block.Timestamp},
	}, times)
	fees, err := c.Reader().TransactionFees(ctx, chainID, []Position{{11, 0}, {12, 1}, {12, 5}})
	require.NoError(t, err)
	tx0, tx1 := in[1].Transactions[0], in[2].Transactions[1]
	require.Equal(t, map[Position]TxFee{
		{11, 0}: {tx0.Hash, tx0.GasPrice, tx0.EffectiveGasPrice, tx0.GasUsed},
		{12, 1}: {tx1.Hash, tx1.GasPrice, tx1.EffectiveGasPrice, tx1.GasUsed},
	}, fees)

	all, err := c.Reader().Logs(ctx, chainID, LogQuery{From: 10, To: 12, Limit: 100})
	require.NoError(t, err)
	require.Equal(t, append(append(append([]chaindata.Log{}, in[0].Logs...), in[1].Logs...), in[2].Logs...), all)

	positions := func(ls []chaindata.Log) []Position {
		out := []Position{}
		for _, l := range ls {
			out = append(out, Position{l.BlockNumber, l.LogIndex})
		}
		return out
	}
	for _, tc := range []struct {
		name string
		q    LogQuery
		want []Position
	}{
		{"by address", LogQuery{From: 10, To: 12, Limit: 100, Filter: LogFilter{Address: in[0].Logs[1].Address}},
			[]Position{{10, 1}, {11, 1}, {12, 1}}},
		{"by address, part of the range", LogQuery{From: 11, To: 11, Limit: 100, Filter: LogFilter{Address: in[0].Logs[1].Address}},
			[]Position{{11, 1}}},
		{"topic0 and topic1", LogQuery{From: 10, To: 12, Limit: 100, Filter: LogFilter{
			Topics: []TopicTerm{{0, hash('c', 1)}, {1, hash('c', 2)}}, Or: []bool{false}}},
			[]Position{{10, 0}, {11, 0}, {12, 0}}},
		{"topic0 or topic0", LogQuery{From: 10, To: 12, Limit: 100, Filter: LogFilter{
			Topics: []TopicTerm{{0, hash('c', 1)}, {0, hash('c', 5)}}, Or: []bool{true}}},
			[]Position{{10, 0}, {10, 1}, {11, 0}, {11, 1}, {12, 0}, {12, 1}}},
		{"topic3 with an address that has no such log", LogQuery{From: 10, To: 12, Limit: 100, Filter: LogFilter{
			Address: in[0].Logs[2].Address, Topics: []TopicTerm{{3, hash('c', 4)}}}}, []Position{}},
		{"after a cursor", LogQuery{From: 10, To: 12, Limit: 100, After: &Position{11, 1}},
			[]Position{{11, 2}, {12, 0}, {12, 1}, {12, 2}}},
		{"a page by offset", LogQuery{From: 10, To: 12, Limit: 3, Offset: 2},
			[]Position{{10, 2}, {11, 0}, {11, 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := c.Reader().Logs(ctx, chainID, tc.q)
			require.NoError(t, err)
			require.Equal(t, tc.want, positions(got))
		})
	}

	// A height the node no longer has: its rows are tombstones and no read
	// shows them.
	require.NoError(t, c.RemoveBlock(ctx, chainID, 11))
	blocks, err = c.Reader().BlocksInRange(ctx, chainID, 10, 12)
	require.NoError(t, err)
	require.Len(t, blocks, 2)
	require.Equal(t, []uint64{10, 12}, []uint64{blocks[0].Number, blocks[1].Number})
	txs, err = c.Reader().TransactionsAt(ctx, chainID, []Position{{11, 0}, {11, 1}})
	require.NoError(t, err)
	require.Empty(t, txs)
	all, err = c.Reader().Logs(ctx, chainID, LogQuery{From: 11, To: 11, Limit: 100})
	require.NoError(t, err)
	require.Empty(t, all)
	logs, err = c.Reader().TxLogs(ctx, chainID, Position{11, 1})
	require.NoError(t, err)
	require.Empty(t, logs)
	times, err = c.Reader().BlockTimes(ctx, chainID, []uint64{11})
	require.NoError(t, err)
	require.Empty(t, times)
	fees, err = c.Reader().TransactionFees(ctx, chainID, []Position{{11, 0}})
	require.NoError(t, err)
	require.Empty(t, fees)
}

func TestReadLookupTables(t *testing.T) {
	c := openTest(t)
	ctx := testContext(t)
	const chainID = "r2"
	x := hash('a', 1)
	bh := func(n uint64) string { return hash('b', n) }

	// A transaction hash mined at 3 (orphaned later), 5 and 8.
	v1, v2 := c.clock.next(), c.clock.next()
	insertRows(t, c, tableTxByHash, txByHashColumns,
		[]any{chainID, x, uint64(3), uint32(2), bh(3), uint8(1), v1},
		[]any{chainID, x, uint64(5), uint32(0), bh(5), uint8(1), v1},
		[]any{chainID, x, uint64(8), uint32(1), bh(8), uint8(1), v1},
		[]any{"other", x, uint64(1), uint32(0), bh(1), uint8(1), v1})
	insertRows(t, c, tableTxByHash, txByHashColumns, []any{chainID, x, uint64(3), uint32(2), bh(3), uint8(0), v2})
	ps, err := c.Reader().TxPositionsByHash(ctx, chainID, x, 0, 100)
	require.NoError(t, err)
	require.Equal(t, []Position{{5, 0}, {8, 1}}, ps, "first by height, tombstone hidden")
	ps, err = c.Reader().TxPositionsByHash(ctx, chainID, x, 0, 6)
	require.NoError(t, err)
	require.Equal(t, []Position{{5, 0}}, ps)
	ps, err = c.Reader().TxPositionsByHash(ctx, chainID, hash('a', 2), 0, 100)
	require.NoError(t, err)
	require.Empty(t, ps)

	// A block hash, orphaned at 4.
	insertRows(t, c, tableBlockByHash, blockByHashColumns,
		[]any{chainID, bh(4), uint64(4), uint8(1), v1}, []any{chainID, bh(6), uint64(6), uint8(1), v1})
	insertRows(t, c, tableBlockByHash, blockByHashColumns, []any{chainID, bh(4), uint64(4), uint8(0), v2})
	hs, err := c.Reader().BlockHeightsByHash(ctx, chainID, bh(6), 0, 100)
	require.NoError(t, err)
	require.Equal(t, []uint64{6}, hs)
	hs, err = c.Reader().BlockHeightsByHash(ctx, chainID, bh(4), 0, 100)
	require.NoError(t, err)
	require.Empty(t, hs)
	hs, err = c.Reader().BlockHeightsByHash(ctx, chainID, bh(6), 0, 5)
	require.NoError(t, err)
	require.Empty(t, hs, "above the highest height asked")

	// Times: two blocks share a second, then gaps of days (wider than the
	// first windows), and a tombstoned height.
	const t0 = 1_700_000_000
	day := uint64(86_400)
	times := []uint64{t0, t0 + 10, t0 + 10, t0 + 5*day, t0 + 400*day}
	var rows [][]any
	for n, ts := range times {
		rows = append(rows, []any{chainID, time.Unix(int64(ts), 0), uint64(n), uint8(1), v1})
	}
	rows = append(rows, []any{chainID, time.Unix(t0+20, 0), uint64(7), uint8(1), v1})
	insertRows(t, c, tableBlockByTime, blockByTimeColumns, rows...)
	insertRows(t, c, tableBlockByTime, blockByTimeColumns, []any{chainID, time.Unix(t0+20, 0), uint64(7), uint8(0), v2})
	for _, tc := range []struct {
		t      uint64
		last   bool
		hi     uint64
		want   uint64
		wantTS uint64
		found  bool
	}{
		{t0 + 10, false, 100, 1, t0 + 10, true},
		{t0 + 10, true, 100, 2, t0 + 10, true},
		{t0 + 11, false, 100, 3, t0 + 5*day, true}, // skips the tombstone at t0+20
		{t0 + 11, true, 100, 2, t0 + 10, true},
		{t0 + 500*day, true, 100, 4, t0 + 400*day, true},
		{t0 + 500*day, false, 100, 0, 0, false},
		{t0 - 1, true, 100, 0, 0, false},
		{t0 - 100*day, false, 100, 0, t0, true},
		{t0 + 11, false, 2, 0, 0, false}, // heights above 2 are not served
	} {
		n, ts, found, err := c.Reader().BlockAtTime(ctx, chainID, tc.t, tc.last, 0, tc.hi)
		require.NoError(t, err)
		require.Equal(t, tc.found, found, "t=%d last=%v", tc.t, tc.last)
		if tc.found {
			require.Equal(t, tc.want, n, "t=%d last=%v", tc.t, tc.last)
			require.Equal(t, tc.wantTS, ts)
		}
	}

	// An address's transactions, one of them orphaned.
	a := "0x00000000000000000000000000000000000000aa"
	insertRows(t, c, tableAddressTxs, addressTxColumns,
		[]any{chainID, a, uint64(1), uint32(0), x, uint8(1), uint8(0), uint8(0), uint8(1), v1},
		[]any{chainID, a, uint64(2), uint32(3), x, uint8(0), uint8(1), uint8(0), uint8(1), v1},
		[]any{chainID, a, uint64(2), uint32(5), x, uint8(1), uint8(1), uint8(0), uint8(1), v1},
		[]any{chainID, a, uint64(9), uint32(0), x, uint8(0), uint8(0), uint8(1), uint8(1), v1})
	insertRows(t, c, tableAddressTxs, addressTxColumns,
		[]any{chainID, a, uint64(2), uint32(3), x, uint8(0), uint8(1), uint8(0), uint8(0), v2})
	for _, tc := range []struct {
		name string
		q    AddressTxQuery
		want []Position
	}{
		{"newest first", AddressTxQuery{Address: a, To: 100, Desc: true, Limit: 2}, []Position{{9, 0}, {2, 5}}},
		{"newest first after a cursor", AddressTxQuery{Address: a, To: 100, Desc: true, After: &Position{2, 5}, Limit: 2},
			[]Position{{1, 0}}},
		{"oldest first with an offset", AddressTxQuery{Address: a, To: 100, Limit: 5, Offset: 1}, []Position{{2, 5}, {9, 0}}},
		{"a height range", AddressTxQuery{Address: a, From: 2, To: 8, Limit: 5}, []Position{{2, 5}}},
		{"oldest first after a cursor", AddressTxQuery{Address: a, To: 100, After: &Position{2, 3}, Limit: 5},
			[]Position{{2, 5}, {9, 0}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := c.Reader().AddressTxPositions(ctx, chainID, tc.q)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}

	// Aggregates: the newest version of a height wins.
	insertRows(t, c, tableAggregates, aggregateColumns,
		[]any{chainID, uint64(10), bh(10), uint64(5), uint64(7), uint64(900), v1},
		[]any{chainID, uint64(20), bh(20), uint64(50), uint64(70), uint64(9000), v1})
	insertRows(t, c, tableAggregates, aggregateColumns, []any{chainID, uint64(10), "0xnew", uint64(6), uint64(8), uint64(901), v2})
	aggs, err := c.Reader().AggregatesAt(ctx, chainID, []uint64{10, 20, 30})
	require.NoError(t, err)
	require.Equal(t, map[uint64]AggregateRow{
		10: {Number: 10, BlockHash: "0xnew", Txs: 6, Logs: 8, Bytes: 901},
		20: {Number: 20, BlockHash: bh(20), Txs: 50, Logs: 70, Bytes: 9000},
	}, aggs)
}

func TestReadStateAndWatermark(t *testing.T) {
	c := openTest(t)
	ctx := testContext(t)
	const chainID = "r3"
	st, err := c.Reader().ReadState(ctx, chainID)
	require.NoError(t, err)
	require.Equal(t, State{}, st)
	_, found, err := c.Reader().ReadWatermark(ctx, chainID, 0, st)
	require.NoError(t, err)
	require.False(t, found, "nothing indexed")

	writeMarks(t, c, chainID, 0, 1, 2, 3, 4, 5, 6, 7, 8, 10)
	wm, found, err := c.Reader().ReadWatermark(ctx, chainID, 0, st)
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, uint64(8), wm, "the marks contiguous from the start height")

	require.NoError(t, c.SaveState(ctx, chainID, StateWatermark, 4))
	require.NoError(t, c.SaveState(ctx, chainID, StateWatermark, 5))
	require.NoError(t, c.SaveState(ctx, chainID, StatePrunedHeight, 2))
	require.NoError(t, c.SaveState(ctx, chainID, StateAggregatorHeight, 3))
	require.NoError(t, c.SaveState(ctx, "other", StatePrunedHeight, 99))
	st, err = c.Reader().ReadState(ctx, chainID)
	require.NoError(t, err)
	require.Equal(t, State{Watermark: 5, HasWatermark: true, AggregatorHeight: 3, HasAggregator: true,
		PrunedHeight: 2, HasPruned: true}, st)
	wm, found, err = c.Reader().ReadWatermark(ctx, chainID, 0, st)
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, uint64(8), wm, "advanced from the saved 5 over 6-8, stopped by the hole at 9")

	wm, found, err = c.Reader().ReadWatermark(ctx, chainID, 0, State{Watermark: 20, HasWatermark: true})
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, uint64(20), wm, "a saved watermark is trusted: the indexer checked those marks")

	_, found, err = c.Reader().ReadWatermark(ctx, chainID, 11, st)
	require.NoError(t, err)
	require.False(t, found, "a start height above the saved watermark, not indexed")
}

// Every read carries its time budget to the server: a query that runs
// longer than the caller's deadline ends with a *TimeoutError soon after
// the deadline, and max_execution_time is what is left of the deadline.
func TestReadTimeBudget(t *testing.T) {
	c := openTest(t)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := c.query(ctx, "sleeping", rawSQL("SELECT sleep(3)"), func(driver.Rows) error { return nil })
	var te *TimeoutError
	require.True(t, errors.As(err, &te), "got %v", err)
	require.Less(t, time.Since(start), 2*time.Second, "the read ends at the deadline, not when the query would")

	ctx, cancel = context.WithTimeout(context.Background(), 4200*time.Millisecond)
	defer cancel()
	var setting string
	require.NoError(t, c.query(ctx, "settings", rawSQL("SELECT value FROM system.settings WHERE name = 'max_execution_time'"),
		func(r driver.Rows) error { return r.Scan(&setting) }))
	require.Equal(t, "5", setting, "4.2 s left: max_execution_time 5")
}
