package storage

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/storage/schema"
)

// lookupViewsDDL is design (b) of the look-up tables, kept here only to
// measure it against the one chosen (lookups.go): materialized views that
// derive the look-up rows on the server from the main inserts. They cover
// the fresh path (no tombstones), which is what a catch-up writes.
var lookupViewsDDL = []string{
	"CREATE MATERIALIZED VIEW mv_tx_by_hash TO tx_by_hash AS" +
		" SELECT chain_id, hash, block_number, tx_index, block_hash, is_canonical, version FROM transactions",
	"CREATE MATERIALIZED VIEW mv_address_txs TO address_txs AS" +
		" SELECT chain_id, address, block_number, tx_index, hash, address = from_address AS is_from," +
		" address = to_address AS is_to, address = contract_address AS is_creation, is_canonical, version FROM transactions" +
		" ARRAY JOIN arrayDistinct(arrayFilter(a -> a != '', [from_address, to_address, contract_address])) AS address",
	"CREATE MATERIALIZED VIEW mv_address_logs TO address_logs AS" +
		" SELECT chain_id, address, block_number, log_index, topic0, is_canonical, version FROM logs",
	"CREATE MATERIALIZED VIEW mv_block_by_hash TO block_by_hash AS" +
		" SELECT chain_id, hash, number, is_canonical, version FROM blocks",
	"CREATE MATERIALIZED VIEW mv_block_by_time TO block_by_time AS" +
		" SELECT chain_id, timestamp, number, is_canonical, version FROM blocks",
}

// cpuMillis is the user and system CPU time of a process so far, from
// /proc/<pid>/stat (clock ticks of 10 ms).
func cpuMillis(b *testing.B, pid string) float64 {
	raw, err := os.ReadFile("/proc/" + pid + "/stat")
	require.NoError(b, err)
	fields := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
	utime, err := strconv.ParseUint(fields[11], 10, 64)
	require.NoError(b, err)
	stime, err := strconv.ParseUint(fields[12], 10, 64)
	require.NoError(b, err)
	return float64(utime+stime) * 10
}

// BenchmarkLookupDesigns writes fresh ranges of 1,000 default-mix blocks
// per call three ways, each into a database of its own, and reports wall
// time and the CPU of the server and of this process per call:
//
//   - main-only: the main tables only, as before the look-up tables;
//   - client: WriteBlocks, the look-up rows built here and sent as five
//     more inserts (design a, the one used);
//   - views: the main inserts only, with materialized views deriving the
//     look-up rows on the server (design b).
//
// (Commit 4bf4c61 had a fourth variant, the client's rows in the order
// they come out of the blocks, before lookupRows.sort.)
//
// The server's CPU includes its background merges while the loop runs.
// main-only and views still build the look-up rows on the client (buildRows
// always does; BenchmarkBuildRows/build shows what that costs) and skip
// their inserts. Run with -benchtime Nx; the variants alternate so load
// from elsewhere on the machine hits all three alike.
func BenchmarkLookupDesigns(b *testing.B) {
	ctx := context.Background()
	template := mixBlocks(0, benchBlocks, benchTxs, benchLogsPerTx)
	server := strconv.Itoa(testCH.Process.Pid())
	self := strconv.Itoa(os.Getpid())

	type variant struct {
		name  string
		c     *ClickHouse
		write func(c *ClickHouse, blocks []*chaindata.BlockData) error
		next  uint64
		wall  time.Duration
		srv   float64
		cli   float64
		n     int
	}
	mainOnly := func(c *ClickHouse, blocks []*chaindata.BlockData) error {
		heights := make([]uint64, len(blocks))
		for i, d := range blocks {
			heights[i] = d.Block.Number
		}
		slices.Sort(heights)
		stale, err := c.stalePositions(ctx, "bench", chaindata.ToRanges(heights))
		if err != nil {
			return err
		}
		r := buildRows("bench", blocks, stale, c.clock.next(), time.Now())
		for _, ins := range r.inserts()[len(lookupTables):] {
			if err := c.insertColumns(ctx, ins.stmt, ins.n, ins.cols); err != nil {
				return err
			}
		}
		return nil
	}
	vs := []*variant{
		{name: "main-only", write: mainOnly},
		{name: "client", write: func(c *ClickHouse, blocks []*chaindata.BlockData) error { return c.WriteBlocks(ctx, "bench", blocks) }},
		{name: "views", write: mainOnly},
	}
	for _, v := range vs {
		v.c = benchOpen(b)
	}
	for _, ddl := range lookupViewsDDL {
		require.NoError(b, vs[2].c.execSQL(ctx, ddl))
	}
	for b.Loop() {
		for _, v := range vs {
			b.StopTimer()
			blocks := shifted(template, v.next, benchBlocks)
			v.next += benchBlocks
			srv0, cli0, t0 := cpuMillis(b, server), cpuMillis(b, self), time.Now()
			b.StartTimer()
			require.NoError(b, v.write(v.c, blocks), v.name)
			v.wall += time.Since(t0)
			v.srv += cpuMillis(b, server) - srv0
			v.cli += cpuMillis(b, self) - cli0
			v.n++
		}
	}
	for _, v := range vs {
		n := float64(v.n)
		b.ReportMetric(float64(v.wall.Milliseconds())/n, v.name+"-ms/op")
		b.ReportMetric(v.srv/n, v.name+"-server-cpu-ms/op")
		b.ReportMetric(v.cli/n, v.name+"-client-cpu-ms/op")
	}
	// Both designs fill the same look-up rows on a fresh range.
	for _, table := range lookupTables {
		var client, views uint64
		q := fmt.Sprintf("SELECT count() FROM %s WHERE chain_id = 'bench'", table)
		require.NoError(b, vs[1].c.conn.QueryRow(ctx, q).Scan(&client))
		require.NoError(b, vs[2].c.conn.QueryRow(ctx, q).Scan(&views))
		require.Equal(b, client, views, table)
		require.Positive(b, client, table)
	}
}

// backfillBlocks is the size of BenchmarkBackfillLookups' chain: 50,000
// default-mix blocks are a million transactions and two million logs.
const backfillBlocks = 50_000

// BenchmarkBackfillLookups times the backfill migrations (0017-0021, 0063) over
// main tables written without look-ups (the way the code before them
// wrote), and reports per file the seconds it takes per million rows of
// its source table (transactions, blocks or logs). Run it with
// -benchtime 1x: the setup writes 50,000 blocks (a minute or two).
func BenchmarkBackfillLookups(b *testing.B) {
	ctx := context.Background()
	c := benchOpen(b)
	template := mixBlocks(0, benchBlocks, benchTxs, benchLogsPerTx)
	for from := uint64(0); from < backfillBlocks; from += benchBlocks {
		blocks := shifted(template, from, benchBlocks)
		r := buildRows("bench", blocks, nil, c.clock.next(), time.Now())
		for _, ins := range r.inserts() {
			if ins.n == 0 || aLookup(ins.stmt.table) {
				continue
			}
			require.NoError(b, c.insertColumns(ctx, ins.stmt, ins.n, ins.cols))
		}
	}
	for _, table := range []string{tableBlocks, tableTransactions, tableLogs} {
		require.NoError(b, c.execSQL(ctx, "OPTIMIZE TABLE "+table+" FINAL"))
	}
	source := map[string]string{
		tableTxByHash: tableTransactions, tableAddressTxs: tableTransactions,
		tableBlockByHash: tableBlocks, tableBlockByTime: tableBlocks, tableAddressLogs: tableLogs,
		tableTopicHeights: tableLogs,
	}
	ms, err := schema.Numbered()
	require.NoError(b, err)
	var backfills []schema.File
	for _, m := range ms {
		if sub := backfillRE.FindStringSubmatch(m.Stmt); sub != nil && source[sub[1]] != "" {
			backfills = append(backfills, m) // the look-ups' (0017-0021, 0063); transfers have their own benchmark
		}
	}
	require.Len(b, backfills, len(lookupTables)+1)
	spent := map[string]time.Duration{}
	for b.Loop() {
		for _, m := range backfills {
			t0 := time.Now()
			require.NoError(b, c.applyMigration(ctx, m))
			spent[m.Name] += time.Since(t0)
		}
	}
	for _, m := range backfills {
		table := backfillRE.FindStringSubmatch(m.Stmt)[1]
		var rows uint64
		require.NoError(b, c.conn.QueryRow(ctx, "SELECT count() FROM "+source[table]).Scan(&rows))
		secs := spent[m.Name].Seconds() / float64(b.N)
		b.ReportMetric(secs/(float64(rows)/1e6), table+"-s/Mrows")
		b.Logf("%s: %d rows of %s in %.2f s (%.0f rows/s)", m.Name, rows, source[table], secs, float64(rows)/secs)
	}
}
