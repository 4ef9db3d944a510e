package storage

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/storage/schema"
	"github.com/tideline-dev/tideline/pkg/tokens"
)

// tokenMixBlock is mixBlock whose first log of every transaction is an
// ERC-20 Transfer of an amount that depends on the height (about half the
// logs, near what Ethereum mainnet holds) and every tenth transaction's
// second an ERC-1155 TransferBatch of three ids.
func tokenMixBlock(n uint64) *chaindata.BlockData {
	d := mixBlock(n, benchTxs, benchLogsPerTx)
	for i := range d.Logs {
		l := &d.Logs[i]
		switch {
		case i%benchLogsPerTx == 0:
			l.Topics = []string{tokens.TopicTransfer, topicOf(n%977 + 1), topicOf(uint64(i) + 5000)}
			l.Data = "0x" + wordOf(n*1_000_003+uint64(i))
		case l.TxIndex%10 == 0:
			l.Topics = []string{tokens.TopicTransferBatch, topicOf(7), topicOf(n%977 + 1), topicOf(uint64(i) + 5000)}
			l.Data = "0x" + wordOf(64) + wordOf(192) + wordOf(3) + wordOf(1) + wordOf(2) + wordOf(n) + wordOf(3) + wordOf(10) + wordOf(20) + wordOf(30)
		}
	}
	return d
}

// BenchmarkBackfillTransfers times the token transfer backfills (0048 from
// logs and blocks, 0049 and 0050 from token_transfers) over a chain
// written without transfers (as the code before them wrote), and reports
// each in seconds per million logs of the chain. Run it with -benchtime
// 1x: the setup writes backfillBlocks blocks (two million logs).
func BenchmarkBackfillTransfers(b *testing.B) {
	ctx := context.Background()
	c := benchOpen(b)
	c.cfg.SkipTokenTransfers = true
	template := make([]*chaindata.BlockData, benchBlocks)
	for i := range template {
		template[i] = tokenMixBlock(uint64(i))
	}
	for from := uint64(0); from < backfillBlocks; from += benchBlocks {
		require.NoError(b, c.WriteBlocks(ctx, "bench", shifted(template, from, benchBlocks)))
	}
	for _, table := range []string{tableBlocks, tableTransactions, tableLogs} {
		require.NoError(b, c.execSQL(ctx, "OPTIMIZE TABLE "+table+" FINAL"))
	}
	ms, err := schema.Numbered()
	require.NoError(b, err)
	var backfills []schema.File
	for _, m := range ms {
		if sub := backfillRE.FindStringSubmatch(m.Stmt); sub != nil && slices.Contains(transferTables, sub[1]) {
			backfills = append(backfills, m)
		}
	}
	require.Len(b, backfills, 3)
	var logs uint64
	require.NoError(b, c.conn.QueryRow(ctx, "SELECT count() FROM logs").Scan(&logs))
	spent := map[string]time.Duration{}
	for b.Loop() {
		for _, m := range backfills {
			t0 := time.Now()
			require.NoError(b, c.applyMigration(ctx, m))
			spent[m.Name] += time.Since(t0)
		}
	}
	var transfers uint64
	require.NoError(b, c.conn.QueryRow(ctx, "SELECT count() FROM token_transfers FINAL").Scan(&transfers))
	for _, m := range backfills {
		secs := spent[m.Name].Seconds() / float64(b.N)
		table := backfillRE.FindStringSubmatch(m.Stmt)[1]
		b.ReportMetric(secs/(float64(logs)/1e6), table+"-s/Mlogs")
		b.Logf("%s: %.2f s for %d logs (%d transfers): %.1f s per million logs", m.Name, secs, logs, transfers, secs/(float64(logs)/1e6))
	}
}
