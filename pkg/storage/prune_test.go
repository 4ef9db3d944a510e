package storage

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/chaindata"
)

// waitMutations waits until the database has no unfinished mutation.
func waitMutations(t *testing.T, c *ClickHouse) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		n, err := c.Records().PendingMutations(testContext(t))
		require.NoError(t, err)
		if n == 0 {
			return
		}
		require.True(t, time.Now().Before(deadline), "%d mutations still running", n)
		time.Sleep(100 * time.Millisecond)
	}
}

// chainRowsAbove counts a chain's rows above a height per prune table.
func chainRowsAbove(t *testing.T, c *ClickHouse, chainID string, height uint64) map[string]uint64 {
	t.Helper()
	out := map[string]uint64{}
	for _, p := range PruneTables {
		var n uint64
		require.NoError(t, c.conn.QueryRow(testContext(t), "SELECT count() FROM "+p.Name+" WHERE chain_id = ? AND "+p.Height+" > ?",
			chainID, height).Scan(&n), p.Name)
		out[p.Name] = n
	}
	return out
}

// Every table with chain rows is either pruned or kept on purpose: a table
// a later migration adds must be put in one of the lists.
func TestPruneTablesCoverTheSchema(t *testing.T) {
	c := openTest(t)
	tables, err := c.Records().ChainTables(testContext(t))
	require.NoError(t, err)
	var listed []string
	for _, p := range PruneTables {
		listed = append(listed, p.Name)
	}
	listed = append(listed, KeptTables...)
	slices.Sort(listed)
	require.Equal(t, tables, listed)
	// Every height column named is the table's.
	for _, p := range PruneTables {
		var n uint64
		require.NoError(t, c.queryRow(testContext(t), columnExistsQuery{c.cfg.Database, p.Name, p.Height}, &n))
		require.Equal(t, uint64(1), n, "%s.%s", p.Name, p.Height)
	}
}

// Pruning chain "a" at 2,000,000: partition 0 holds only "a" and is
// dropped from every detail table; partition 1 holds a row of "b" too and
// partition 2 lies partly above the height, so there a mutation deletes
// "a"'s rows. Afterwards "a" has no row at or below the height in any
// detail or look-up table, everything above it is untouched, "b" is
// untouched, and the marks and aggregates of "a" stay. Pruning again
// finds nothing left.
func TestPruneRowsDropsWhatItCanAndDeletesTheRest(t *testing.T) {
	c := openTest(t)
	ctx := testContext(t)
	aHeights := []uint64{999_998, 999_999, 1_000_000, 1_000_001, 1_999_999, 2_000_000, 2_000_001, 2_000_002}
	for _, h := range aHeights {
		require.NoError(t, c.WriteBlocks(ctx, "a", blocksOf(withTraces(transferBlock(h))))) // token transfers and traces
	}
	require.NoError(t, c.WriteBlocks(ctx, "b", blocksOf(withTraces(transferBlock(1_000_500)), withTraces(transferBlock(2_000_001)))))
	require.NoError(t, c.Aggregates().WriteAggregates(ctx, "a", []AggregateRow{{Number: 999_998, Txs: 2}, {Number: 999_999, Txs: 4}}))
	const height = 2_000_000

	before, err := c.Retention().RowsAtOrBelow(ctx, "a", height)
	require.NoError(t, err)
	for _, p := range PruneTables {
		require.Positive(t, before[p.Name], "no row of a in %s to prune: the test proves nothing there", p.Name)
	}
	aboveBefore := chainRowsAbove(t, c, "a", height)
	bBefore, err := c.Records().ChainRows(ctx, "b")
	require.NoError(t, err)

	res, err := c.Retention().PruneRows(ctx, "a", height)
	require.NoError(t, err)
	var want []string
	for _, p := range PruneTables {
		want = append(want, p.Name+"/0")
	}
	require.Equal(t, want, res.Dropped, "partition 0 holds only a")
	var names []string
	for _, p := range PruneTables {
		names = append(names, p.Name)
	}
	require.Equal(t, names, res.Mutated, "partitions 1 and 2 hold b or heights above")
	require.Empty(t, res.Reindex)
	waitMutations(t, c)

	after, err := c.Retention().RowsAtOrBelow(ctx, "a", height)
	require.NoError(t, err)
	for _, p := range PruneTables {
		require.Zero(t, after[p.Name], "rows of a left at or below %d in %s", height, p.Name)
	}
	require.Equal(t, aboveBefore, chainRowsAbove(t, c, "a", height), "rows above the height untouched")
	stored, err := c.StoredBlocks(ctx, "a", 0, 3_000_000)
	require.NoError(t, err)
	require.Equal(t, []chaindata.StoredBlock{
		{Number: 2_000_001, Hash: hash('b', 2_000_001), ParentHash: hash('b', 2_000_000), Canonical: true},
		{Number: 2_000_002, Hash: hash('b', 2_000_002), ParentHash: hash('b', 2_000_001), Canonical: true},
	}, stored)
	bAfter, err := c.Records().ChainRows(ctx, "b")
	require.NoError(t, err)
	require.Equal(t, bBefore, bAfter, "the other chain untouched")
	for _, h := range aHeights {
		ok, err := c.IsIndexed(ctx, "a", h)
		require.NoError(t, err)
		require.True(t, ok, "the mark of %d stays", h)
	}
	rows, err := c.Aggregates().AggregateRows(ctx, "a", 0, height)
	require.NoError(t, err)
	require.Len(t, rows, 2, "aggregates stay")

	res, err = c.Retention().PruneRows(ctx, "a", height)
	require.NoError(t, err)
	require.Equal(t, PruneResult{}, res, "nothing left to prune")
}

// A chain's marks found in a partition after its rows were dropped (its
// rows landed between the check and the drop) are deleted with its chunk
// records, so its scans index those heights again.
func TestReindexOthersDeletesTheirMarksInTheDroppedPartition(t *testing.T) {
	c := openTest(t)
	ctx := testContext(t)
	writeMarks(t, c, "b", 10, 11, 1_000_001)
	writeMarks(t, c, "a", 12)
	require.NoError(t, c.recordFullChunks(ctx, "b", []uint64{0}))
	others, err := c.reindexOthers(ctx, "a", 0)
	require.NoError(t, err)
	require.Equal(t, []string{"b"}, others)
	waitMutations(t, c)
	missing, err := c.MissingHeights(ctx, "b", 10, 11, 10)
	require.NoError(t, err)
	require.Equal(t, []uint64{10, 11}, missing, "b's marks in partition 0 are gone, chunk record and all")
	for chainID, h := range map[string]uint64{"b": 1_000_001, "a": 12} {
		ok, err := c.IsIndexed(ctx, chainID, h)
		require.NoError(t, err)
		require.True(t, ok, "%s %d kept", chainID, h)
	}
}

// The height of the newest block older than a cutoff, within a range.
func TestHighestBlockBefore(t *testing.T) {
	c := openTest(t)
	ctx := testContext(t)
	for h := uint64(1); h <= 10; h++ {
		require.NoError(t, c.WriteBlocks(ctx, "1", blocksOf(sampleBlock(h)))) // timestamp 1_700_000_000 + 12h
	}
	at := func(h uint64) time.Time { return time.Unix(1_700_000_000+int64(h)*12, 0) }
	for _, tc := range []struct {
		from, to uint64
		cutoff   time.Time
		want     uint64
		found    bool
	}{
		{1, 10, at(5), 4, true},
		{1, 10, at(5).Add(time.Second), 5, true},
		{1, 10, at(100), 10, true},
		{1, 3, at(100), 3, true},
		{1, 10, at(1), 0, false},
		{6, 10, at(5), 0, false},
		{1, 10, time.Unix(0, 0), 0, false},
	} {
		got, found, err := c.Retention().HighestBlockBefore(ctx, "1", tc.from, tc.to, tc.cutoff)
		require.NoError(t, err)
		require.Equal(t, [2]any{tc.want, tc.found}, [2]any{got, found}, "%+v", tc)
	}
}

// Retention's statements use nothing ClickHouse 18.16 lacks, bind every
// argument, and never read with FINAL and PREWHERE.
func TestPruneSQLRunsOn1816(t *testing.T) {
	var texts []string
	for _, s := range []statement{
		rowsAtOrBelowQuery{PruneTables[0], "", 0}, anyAtOrBelowQuery{PruneTables[2], "", 0}, otherChainsQuery{PruneTables[1], "", 0, 0}, otherChainIDsQuery{},
		blockBeforeQuery{}, blockCountsQuery{}, aggregateRowsQuery{}, lastAggregateQuery{},
		insertStmt{tableAggregates, aggregateColumns},
		deleteRowsStmt{tableBlocks, "chain_id = ? AND number <= ?", []any{"", 0}},
	} {
		sql, args := s.toSQL()
		require.Equal(t, len(args), strings.Count(sql, "?"), sql)
		texts = append(texts, sql)
	}
	texts = append(texts, dropPartitionStmt(tableBlocks, 3))
	for _, text := range texts {
		upper := strings.ToUpper(text)
		for _, banned := range []string{"DELETE FROM", "PREWHERE", " VALUES", "MAP(", "JSON", "OVER (", "IN PARTITION", "DATETIME64"} {
			require.NotContains(t, upper, banned, text)
		}
	}
	require.Equal(t, "ALTER TABLE blocks DROP PARTITION 3", dropPartitionStmt(tableBlocks, 3))
}
