package storage

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The newest save of a chain wins, also against a row written with a
// version from a clock far ahead; removed chains keep their row.
func TestChainRecordsNewestWins(t *testing.T) {
	c := openTest(t)
	ctx := testContext(t)
	_, found, err := c.Records().ChainRecord(ctx, "a")
	require.NoError(t, err)
	require.False(t, found)

	first, err := c.Records().SaveChainRecord(ctx, ChainRecord{ChainID: "a", State: "active", Definition: `{"block_time":"1s"}`})
	require.NoError(t, err)
	// A row from a host whose clock runs a day ahead.
	ahead := first.Version + uint64(24*time.Hour)
	require.NoError(t, c.insert(ctx, insertStmt{tableChainRegistry, chainRegistryColumns},
		[][]any{{"a", "paused", `{"block_time":"2s"}`, uint8(0), time.Now().UTC().Truncate(time.Second), ahead}}))
	got, found, err := c.Records().ChainRecord(ctx, "a")
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, "paused", got.State)

	saved, err := c.Records().SaveChainRecord(ctx, ChainRecord{ChainID: "a", State: "removed", Definition: got.Definition, DropData: true})
	require.NoError(t, err)
	require.Greater(t, saved.Version, ahead, "a save is always the newest")
	_, err = c.Records().SaveChainRecord(ctx, ChainRecord{ChainID: "b", State: "active", Definition: "{}"})
	require.NoError(t, err)

	// Before and after a merge alike.
	for _, merge := range []bool{false, true} {
		if merge {
			mergeFully(t, c, tableChainRegistry)
		}
		all, err := c.Records().ChainRecords(ctx)
		require.NoError(t, err)
		require.Len(t, all, 2)
		require.Equal(t, "a", all[0].ChainID)
		require.Equal(t, "removed", all[0].State)
		require.True(t, all[0].DropData)
		require.Equal(t, `{"block_time":"2s"}`, all[0].Definition)
		require.Equal(t, saved.Version, all[0].Version)
		require.Equal(t, "b", all[1].ChainID)
		require.False(t, all[1].DropData)
	}
}

// Deleting a chain's rows empties every table of that chain, whatever the
// table, and leaves the other chains' rows as they were.
func TestDeleteChainRowsLeavesOtherChains(t *testing.T) {
	c := openTest(t)
	ctx := testContext(t)
	for _, chainID := range []string{"gone", "kept"} {
		require.NoError(t, c.WriteBlocks(ctx, chainID, blocksOf(sampleBlock(1), sampleBlock(2))))
		require.NoError(t, c.SaveState(ctx, chainID, StateWatermark, 2))
		_, err := c.Records().SaveChainRecord(ctx, ChainRecord{ChainID: chainID, State: "active", Definition: "{}"})
		require.NoError(t, err)
	}
	tables, err := c.Records().ChainTables(ctx)
	require.NoError(t, err)
	for _, want := range []string{tableBlocks, tableTransactions, tableLogs, tableIndexedHeights, tableChainState} {
		require.Contains(t, tables, want)
	}
	require.NotContains(t, tables, tableChainRegistry, "the registry keeps the removed chain's row")
	keptBefore, err := c.Records().ChainRows(ctx, "kept")
	require.NoError(t, err)
	goneBefore, err := c.Records().ChainRows(ctx, "gone")
	require.NoError(t, err)
	require.Positive(t, goneBefore[tableBlocks])
	require.Positive(t, goneBefore[tableLogs])

	deleted, err := c.Records().DeleteChainRows(ctx, "gone")
	require.NoError(t, err)
	require.Equal(t, tables, deleted)
	deadline := time.Now().Add(time.Minute)
	for {
		n, err := c.Records().PendingMutations(ctx)
		require.NoError(t, err)
		if n == 0 {
			break
		}
		require.True(t, time.Now().Before(deadline), "%d mutations still running", n)
		time.Sleep(100 * time.Millisecond)
	}
	goneAfter, err := c.Records().ChainRows(ctx, "gone")
	require.NoError(t, err)
	for table, n := range goneAfter {
		require.Zero(t, n, "rows of the deleted chain left in %s", table)
	}
	keptAfter, err := c.Records().ChainRows(ctx, "kept")
	require.NoError(t, err)
	require.Equal(t, keptBefore, keptAfter)
	rec, found, err := c.Records().ChainRecord(ctx, "gone")
	require.NoError(t, err)
	require.True(t, found, "the registry row stays")
	require.Equal(t, "active", rec.State)
}

// The registry's statements use nothing ClickHouse 18.16 lacks.
func TestChainRegistrySQLRunsOn1816(t *testing.T) {
	for _, s := range []statement{
		chainRecordVersionQuery{}, chainRecordsQuery{}, chainTablesQuery{}, chainRowsQuery{"blocks", ""},
		deleteChainRowsStmt("blocks", ""), pendingMutationsQuery{}, insertStmt{tableChainRegistry, chainRegistryColumns},
	} {
		sql, args := s.toSQL()
		require.Equal(t, len(args), strings.Count(sql, "?"), sql)
		upper := strings.ToUpper(sql)
		for _, banned := range []string{"DELETE FROM", "DROP PARTITION", "FINAL", "PREWHERE", " VALUES", "MAP(", "JSON"} {
			require.NotContains(t, upper, banned, sql)
		}
	}
}
