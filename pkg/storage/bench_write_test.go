package storage

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/chaindata"
)

// The default mix of issue 8: 20 transactions per block, 2 logs each,
// about 61 KB of JSON per block; 1,000 blocks are 62,000 rows.
const (
	benchTxs       = 20
	benchLogsPerTx = 2
	benchBlocks    = 1000
)

func rowsOf(blocks []*chaindata.BlockData) int {
	n := 0
	for _, d := range blocks {
		n += 2 + len(d.Transactions) + len(d.Logs) // block row and mark
	}
	return n
}

func reportRates(b *testing.B, blocks, rows int) {
	secs := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(float64(blocks)/secs, "blocks/s")
	b.ReportMetric(float64(rows)/secs, "rows/s")
	b.ReportMetric(secs*1000, "ms/op")
}

// Row-by-row building, the way the code before WriteBlocks did it: one
// []any per row, appended with batch.Append. Kept here only to measure
// against the column-wise rows.go.
func rowwise(chainID string, blocks []*chaindata.BlockData, version uint64) (txs, logs, bs, marks [][]any) {
	now := time.Now().UTC().Truncate(time.Second)
	for _, d := range blocks {
		b := &d.Block
		for i := range d.Transactions {
			t := &d.Transactions[i]
			txs = append(txs, []any{chainID, t.BlockNumber, t.BlockHash, t.Index, t.Hash, t.Type,
				t.From, t.To, t.Value, t.Nonce, t.Gas, t.GasPrice, t.Status, t.GasUsed, t.EffectiveGasPrice,
				t.ContractAddress, t.LogCount, t.Raw, t.ReceiptRaw, version, canonical})
		}
		for i := range d.Logs {
			l := &d.Logs[i]
			var topics [4]string
			copy(topics[:], l.Topics)
			logs = append(logs, []any{chainID, l.BlockNumber, l.BlockHash, l.TxHash, l.TxIndex, l.LogIndex,
				l.Address, topics[0], topics[1], topics[2], topics[3], uint8(len(l.Topics)), l.Data, l.Raw, version, canonical})
		}
		bs = append(bs, []any{chainID, b.Number, b.Hash, b.ParentHash, time.Unix(int64(b.Timestamp), 0).UTC(), b.Miner,
			b.GasUsed, b.GasLimit, b.BaseFeePerGas, b.Size, b.TxCount, b.LogCount, b.Raw, version, canonical})
		marks = append(marks, []any{chainID, b.Number, b.Hash, now, version})
	}
	return txs, logs, bs, marks
}

// BenchmarkBuildRows measures turning 1,000 blocks of the default mix into
// insert batches, without sending them:
//
//   - build: rows.go's column slices alone (no driver), the look-up rows
//     (lookups.go) included;
//   - columnwise: build plus batch.Column(i).Append of each slice of the
//     four main tables;
//   - columnwise-lookups: build plus the same for the five look-up tables;
//   - rowwise: []any rows plus batch.Append per row, for comparison with
//     columnwise.
//
// The batch variants include a PrepareBatch round trip per table (each
// batch is aborted, not sent). rows/s counts the main tables' rows.
func BenchmarkBuildRows(b *testing.B) {
	c := benchOpen(b)
	ctx := context.Background()
	blocks := mixBlocks(1_000_000, benchBlocks, benchTxs, benchLogsPerTx)
	rows := rowsOf(blocks)
	tables := []insertStmt{
		{tableTransactions, transactionRewriteColumns}, {tableLogs, logRewriteColumns},
		{tableBlocks, blockRewriteColumns}, {tableIndexedHeights, indexedHeightColumns},
	}

	b.Run("build", func(b *testing.B) {
		for b.Loop() {
			buildRows("bench", blocks, nil, 1, time.Now())
		}
		reportRates(b, len(blocks), rows)
	})
	b.Run("columnwise", func(b *testing.B) {
		for b.Loop() {
			r := buildRows("bench", blocks, nil, 1, time.Now())
			for i, cols := range [][]any{r.txs.columns(), r.logs.columns(), r.blocks.columns(), r.marks.columns()} {
				batch, err := c.prepareInsert(ctx, tables[i])
				require.NoError(b, err)
				for j, col := range cols {
					require.NoError(b, batch.Column(j).Append(col))
				}
				require.NoError(b, batch.Abort())
			}
		}
		reportRates(b, len(blocks), rows)
	})
	b.Run("columnwise-lookups", func(b *testing.B) {
		for b.Loop() {
			r := buildRows("bench", blocks, nil, 1, time.Now())
			for _, ins := range r.inserts()[:len(lookupTables)] {
				batch, err := c.prepareInsert(ctx, ins.stmt)
				require.NoError(b, err)
				for j, col := range ins.cols {
					require.NoError(b, batch.Column(j).Append(col))
				}
				require.NoError(b, batch.Abort())
			}
		}
		reportRates(b, len(blocks), rows)
	})
	b.Run("rowwise", func(b *testing.B) {
		for b.Loop() {
			txs, logs, bs, marks := rowwise("bench", blocks, 1)
			for i, tableRows := range [][][]any{txs, logs, bs, marks} {
				batch, err := c.prepareInsert(ctx, tables[i])
				require.NoError(b, err)
				for _, row := range tableRows {
					require.NoError(b, batch.Append(row...))
				}
				require.NoError(b, batch.Abort())
			}
		}
		reportRates(b, len(blocks), rows)
	})
}

// BenchmarkWriteBlocks writes 1,000 blocks of the default mix per call
// into the real server (18.16 here): each iteration a fresh range (the
// catch-up), then the same range again (a rewrite: every position is found
// stored), and one block per call (the live path). Every call writes the
// look-up tables too; rows/s counts the main tables' rows, as before them.
func BenchmarkWriteBlocks(b *testing.B) {
	c := benchOpen(b)
	ctx := context.Background()
	template := mixBlocks(0, benchBlocks, benchTxs, benchLogsPerTx)
	rows := rowsOf(template)
	at := func(from uint64, count int) []*chaindata.BlockData { return shifted(template, from, count) }

	next := uint64(0)
	b.Run(fmt.Sprintf("fresh/%d", benchBlocks), func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			blocks := at(next, benchBlocks)
			next += benchBlocks
			b.StartTimer()
			require.NoError(b, c.WriteBlocks(ctx, "bench", blocks))
		}
		reportRates(b, benchBlocks, rows)
	})
	// A range activity hands its blocks newest first.
	b.Run(fmt.Sprintf("fresh-newest-first/%d", benchBlocks), func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			blocks := at(next, benchBlocks)
			slices.Reverse(blocks)
			next += benchBlocks
			b.StartTimer()
			require.NoError(b, c.WriteBlocks(ctx, "bench", blocks))
		}
		reportRates(b, benchBlocks, rows)
	})
	b.Run(fmt.Sprintf("rewrite/%d", benchBlocks), func(b *testing.B) {
		blocks := at(0, benchBlocks)
		for b.Loop() {
			require.NoError(b, c.WriteBlocks(ctx, "bench", blocks))
		}
		reportRates(b, benchBlocks, rows)
	})
	b.Run("live/1", func(b *testing.B) {
		one := at(0, 1)
		for b.Loop() {
			b.StopTimer()
			one = at(next, 1)
			next++
			b.StartTimer()
			require.NoError(b, c.WriteBlocks(ctx, "bench", one))
		}
		reportRates(b, 1, rowsOf(one))
	})
}

// shifted copies the first count blocks of template to the heights from,
// from+1, … without rebuilding the raw JSON (which is not what the write
// benchmarks measure).
func shifted(template []*chaindata.BlockData, from uint64, count int) []*chaindata.BlockData {
	out := make([]*chaindata.BlockData, count)
	for i, d := range template[:count] {
		n := from + uint64(i)
		cp := *d
		cp.Block.Number = n
		cp.Transactions = append([]chaindata.Transaction(nil), d.Transactions...)
		cp.Logs = append([]chaindata.Log(nil), d.Logs...)
		for j := range cp.Transactions {
			cp.Transactions[j].BlockNumber = n
		}
		for j := range cp.Logs {
			cp.Logs[j].BlockNumber = n
		}
		out[i] = &cp
	}
	return out
}

// BenchmarkStalePositions times WriteBlocks' one read before writing: on a
// range with nothing stored (the catch-up and a new live height) and on a
// range that is all stored (a rewrite), for 1 and 1,000 heights.
func BenchmarkStalePositions(b *testing.B) {
	c := benchOpen(b)
	ctx := context.Background()
	require.NoError(b, c.WriteBlocks(ctx, "bench", mixBlocks(0, benchBlocks, benchTxs, benchLogsPerTx)))
	for _, tc := range []struct {
		name   string
		from   uint64
		n      uint64
		stored int
	}{
		{"fresh/1", 5000, 1, 0},
		{"fresh/1000", 5000, 1000, 0},
		{"stored/1", 500, 1, 1},
		{"stored/1000", 0, 1000, 1000},
	} {
		b.Run(tc.name, func(b *testing.B) {
			rs := []chaindata.HeightRange{{From: tc.from, To: tc.from + tc.n - 1}}
			for b.Loop() {
				got, err := c.stalePositions(ctx, "bench", rs)
				require.NoError(b, err)
				require.Len(b, got, tc.stored)
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/op")
		})
	}
}
