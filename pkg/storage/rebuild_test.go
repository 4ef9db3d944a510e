package storage

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/tideline-dev/tideline/internal/testkit"
	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/localstack"
	"github.com/tideline-dev/tideline/pkg/storage/schema"
)

// The tables 0022-0043 rebuild with smaller granules, and the granule size
// each gets.
var rebuiltTables = map[string]int{
	tableBlocks: 256, tableTransactions: 256, tableLogs: 512,
	tableTxByHash: 1024, tableBlockByHash: 1024, tableAddressTxs: 1024, tableAddressLogs: 1024,
}

// rebuildSteps finds the rebuild's first file (the first create) and its
// swap among the migrations, so the tests can stop before each.
func rebuildSteps(t *testing.T, ms []schema.File) (firstCreate, firstCopy, swap int) {
	t.Helper()
	firstCreate, firstCopy, swap = -1, -1, -1
	for i, m := range ms {
		switch {
		case firstCreate < 0 && strings.HasPrefix(m.Name, "0022_create_"):
			firstCreate = i
		case firstCopy < 0 && strings.Contains(m.Name, "_copy_"):
			firstCopy = i
		case strings.HasSuffix(m.Name, "_swap_rebuilt_tables.sql"):
			swap = i
		}
	}
	require.True(t, firstCreate >= 0 && firstCopy > firstCreate && swap > firstCopy, "rebuild files not found")
	return firstCreate, firstCopy, swap
}

// lookupsView is what the look-up reads answer for the rows writeHistory
// makes.
type lookupsView struct {
	Canonical                []canonicalView
	OrphanedTx, LiveTx       []Position
	OrphanedBlock, LiveBlock []uint64
	AddressTxs               []Position
	AddressLogs              []string
	Times                    []uint64
}

func readRebuilt(t *testing.T, c *ClickHouse) lookupsView {
	t.Helper()
	ctx := testContext(t)
	var v lookupsView
	for n := uint64(3); n <= 6; n++ {
		v.Canonical = append(v.Canonical, readCanonical(t, c, "1", n))
	}
	var err error
	// sampleBlock(5)'s second transaction is orphaned by forkOf(5, 1, 1).
	v.OrphanedTx, err = c.Reader().TxPositionsByHash(ctx, "1", sampleBlock(5).Transactions[1].Hash, 0, 100)
	require.NoError(t, err)
	v.LiveTx, err = c.Reader().TxPositionsByHash(ctx, "1", sampleBlock(6).Transactions[1].Hash, 0, 100)
	require.NoError(t, err)
	v.OrphanedBlock, err = c.Reader().BlockHeightsByHash(ctx, "1", hash('b', 5), 0, 100)
	require.NoError(t, err)
	v.LiveBlock, err = c.Reader().BlockHeightsByHash(ctx, "1", hash('f', 5), 0, 100)
	require.NoError(t, err)
	from := sampleBlock(4).Transactions[0].From
	v.AddressTxs, err = c.Reader().AddressTxPositions(ctx, "1", AddressTxQuery{Address: from, To: 100, Desc: true, Limit: 10})
	require.NoError(t, err)
	logs, err := c.Reader().Logs(ctx, "1", LogQuery{From: 0, To: 100, Filter: LogFilter{Address: sampleBlock(4).Logs[0].Address}, Limit: 50})
	require.NoError(t, err)
	for _, l := range logs {
		v.AddressLogs = append(v.AddressLogs, fmt.Sprintf("%d:%d:%s", l.BlockNumber, l.LogIndex, l.TxHash))
	}
	for n := uint64(3); n <= 6; n++ {
		h, _, found, err := c.Reader().BlockAtTime(ctx, "1", sampleBlock(n).Block.Timestamp, false, 0, 100)
		require.NoError(t, err)
		require.True(t, found)
		v.Times = append(v.Times, h)
	}
	return v
}

// writeHistory writes heights 3-6, then a fork of 5 with fewer rows: the
// tables hold several versions of some keys and tombstones.
func writeHistory(t *testing.T, c *ClickHouse) {
	t.Helper()
	ctx := testContext(t)
	// Written before the token transfer tables (0044-0046) and the traces
	// tables (0051-0053) exist, as a binary from then did.
	c.cfg.SkipTokenTransfers = true
	c.beforeTraces, c.beforeTopics = true, true
	defer func() { c.cfg.SkipTokenTransfers, c.beforeTraces, c.beforeTopics = false, false, false }()
	for n := uint64(3); n <= 6; n++ {
		require.NoError(t, c.WriteBlocks(ctx, "1", blocksOf(sampleBlock(n))))
	}
	require.NoError(t, c.WriteBlocks(ctx, "1", blocksOf(forkOf(5, 1, 1))))
}

var granularityRE = regexp.MustCompile(`index_granularity = (\d+)`)

func granularity(t *testing.T, c *ClickHouse, table string) string {
	t.Helper()
	var create string
	require.NoError(t, c.conn.QueryRow(testContext(t), "SHOW CREATE TABLE "+c.cfg.Database+"."+table).Scan(&create))
	m := granularityRE.FindStringSubmatch(create)
	require.NotNil(t, m, create)
	return m[1]
}

// Rebuilding seven tables with smaller granules on a database with rows
// (0022-0043): every row is copied, versions and tombstones included, the
// reads answer exactly as before, the write path goes on, the new tables
// have their granule size and the old ones are gone. The swap run again (a
// crash before its record) counts as applied.
func TestRebuildWithSmallerGranulesKeepsEveryRow(t *testing.T) {
	ctx := testContext(t)
	c := openFresh(t)
	ms, err := schema.Numbered()
	require.NoError(t, err)
	firstCreate, firstCopy, swap := rebuildSteps(t, ms)

	_, err = c.migrate(ctx, ms[:firstCreate])
	require.NoError(t, err)
	stopMerges(t, c)
	writeHistory(t, c)
	before := readRebuilt(t, c)
	require.Empty(t, before.OrphanedTx, "the fixture has an orphaned transaction")
	require.Empty(t, before.OrphanedBlock)
	require.Equal(t, []uint64{5}, before.LiveBlock)
	require.NotEmpty(t, before.AddressTxs)
	require.NotEmpty(t, before.AddressLogs)

	// The new tables, merges held, then the copies: every row, not just
	// the newest version of each key.
	_, err = c.migrate(ctx, ms[:firstCopy])
	require.NoError(t, err)
	for table, g := range rebuiltTables {
		require.NoError(t, c.execSQL(ctx, fmt.Sprintf("SYSTEM STOP MERGES %s.%s_g%d", c.cfg.Database, table, g)))
	}
	_, err = c.migrate(ctx, ms[:swap])
	require.NoError(t, err)
	for table, g := range rebuiltTables {
		require.Equal(t, rawCount(t, c, table, "1"), rawCount(t, c, fmt.Sprintf("%s_g%d", table, g), "1"), table)
	}
	require.Greater(t, rawCount(t, c, tableTransactions, "1"), uint64(8), "the copied table holds tombstones and old versions")

	applied, err := c.migrate(ctx, ms)
	require.NoError(t, err)
	require.Len(t, applied, len(ms)-swap)
	require.Equal(t, before, readRebuilt(t, c))
	for table, g := range rebuiltTables {
		require.Equal(t, fmt.Sprint(g), granularity(t, c, table), table)
	}
	exist, err := c.tablesExist(ctx, []string{"blocks_g8192", "blocks_g256", "address_logs_g8192", "address_logs_g1024"})
	require.NoError(t, err)
	require.Empty(t, exist, "the old tables are dropped, the new names are free")

	// The swap again, as after a crash before its record: nothing happens.
	require.NoError(t, c.applyMigration(ctx, ms[swap]))
	require.Equal(t, before, readRebuilt(t, c))

	// Writes go on into the rebuilt tables: height 5 back to its first
	// block, and a new height.
	require.NoError(t, c.WriteBlocks(ctx, "1", blocksOf(sampleBlock(5), sampleBlock(7))))
	require.Equal(t, viewOf(sampleBlock(5)), readCanonical(t, c, "1", 5))
	require.Equal(t, viewOf(sampleBlock(7)), readCanonical(t, c, "1", 7))
	ps, err := c.Reader().TxPositionsByHash(ctx, "1", sampleBlock(5).Transactions[1].Hash, 0, 100)
	require.NoError(t, err)
	require.Equal(t, []Position{{5, 1}}, ps)
}

// A server that refuses to drop tables over max_table_size_to_drop (50 GB
// by default, a few bytes here) does not stop the migrations: the old
// tables stay under their _g8192 names, a warning names each, the rest is
// applied and the data reads through the rebuilt tables.
func TestRebuildWhenTheServerRefusesTheDrop(t *testing.T) {
	testkit.ServerOnly(t, testCH, "the server setting max_table_size_to_drop")
	ch, err := localstack.StartClickHouseWith(filepath.Join(t.TempDir(), "ch"), localstack.ClickHouseOptions{MaxTableSizeToDrop: 1})
	require.NoError(t, err)
	t.Cleanup(ch.Stop)
	core, logs := observer.New(zap.WarnLevel)
	ctx := testContext(t)
	c, err := Open(ctx, config.ClickHouse{Addr: ch.Addr, Database: "t_drop", QueryTimeout: 30 * time.Second}, zap.New(core))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	ms, err := schema.Numbered()
	require.NoError(t, err)
	firstCreate, _, _ := rebuildSteps(t, ms)
	_, err = c.migrate(ctx, ms[:firstCreate])
	require.NoError(t, err)
	writeHistory(t, c)
	before := readRebuilt(t, c)

	require.NoError(t, c.Migrate(ctx))
	require.Equal(t, before, readRebuilt(t, c))
	var kept []string
	for _, e := range logs.FilterMessageSnippet("table not dropped").All() {
		kept = append(kept, e.ContextMap()["table"].(string))
	}
	var want []string
	for table := range rebuiltTables {
		want = append(want, table+"_g8192")
	}
	require.ElementsMatch(t, want, kept)
	exist, err := c.tablesExist(ctx, want)
	require.NoError(t, err)
	require.Len(t, exist, len(want), "the old tables are kept")

	applied, err := c.migrate(context.Background(), ms)
	require.NoError(t, err)
	require.Empty(t, applied)
}
