package storage

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tideline-dev/tideline/pkg/storage/schema"
	"go.uber.org/zap/zaptest"
)

func TestMigrateIsIdempotent(t *testing.T) {
	ctx := testContext(t)
	c, err := Open(ctx, testConfig(t), zaptest.NewLogger(t))
	require.NoError(t, err)
	defer c.Close()
	ms, err := schema.Numbered()
	require.NoError(t, err)

	applied, err := c.migrate(ctx, ms)
	require.NoError(t, err)
	require.Len(t, applied, len(ms))

	applied, err = c.migrate(ctx, ms)
	require.NoError(t, err)
	require.Empty(t, applied)
	require.NoError(t, c.Migrate(ctx))

	var recorded uint64
	require.NoError(t, c.conn.QueryRow(ctx, "SELECT count() FROM schema_migrations").Scan(&recorded))
	require.Equal(t, uint64(len(ms)), recorded)

	engines := tableEngines(t, c)
	require.Equal(t, map[string]string{
		"blocks":            "ReplacingMergeTree",
		"transactions":      "ReplacingMergeTree",
		"logs":              "ReplacingMergeTree",
		"indexed_heights":   "ReplacingMergeTree",
		"chain_state":       "ReplacingMergeTree",
		"indexed_chunks":    "ReplacingMergeTree",
		"tx_by_hash":        "ReplacingMergeTree",
		"block_by_hash":     "ReplacingMergeTree",
		"block_by_time":     "ReplacingMergeTree",
		"address_txs":       "ReplacingMergeTree",
		"address_logs":      "ReplacingMergeTree",
		"topic_heights":     "ReplacingMergeTree",
		"aggregates":        "ReplacingMergeTree",
		"chain_registry":    "ReplacingMergeTree",
		"subscriptions":     "ReplacingMergeTree",
		"schema_migrations": "ReplacingMergeTree",

		"token_transfers":          "ReplacingMergeTree",
		"token_transfers_by_token": "ReplacingMergeTree",
		"address_transfers":        "ReplacingMergeTree",
		"token_metadata":           "ReplacingMergeTree",
		"traces":                   "ReplacingMergeTree",
		"address_traces":           "ReplacingMergeTree",
		"stream_events":            "ReplacingMergeTree",
		"api_keys":                 "ReplacingMergeTree",
	}, engines)

	// A new file is applied alone, after the others.
	more := append(ms, schema.File{Version: uint32(len(ms) + 1), Name: "0006_probe.sql",
		Stmt: "CREATE TABLE IF NOT EXISTS probe (a UInt8) ENGINE = Memory", Checksum: "new"})
	applied, err = c.migrate(ctx, more)
	require.NoError(t, err)
	require.Equal(t, []string{"0006_probe.sql"}, applied)
}

// Editing an applied file is refused: the database would silently keep
// the old schema while the repository shows the new one.
func TestMigrateRefusesChangedFile(t *testing.T) {
	ctx := testContext(t)
	c, err := Open(ctx, testConfig(t), zaptest.NewLogger(t))
	require.NoError(t, err)
	defer c.Close()
	ms, err := schema.Numbered()
	require.NoError(t, err)
	_, err = c.migrate(ctx, ms)
	require.NoError(t, err)

	ms[1].Checksum = "edited"
	_, err = c.migrate(ctx, ms)
	require.ErrorContains(t, err, "migration 0002_create_transactions.sql was changed after it was applied")
}

// tableEngines lists the tables of the store's database with their engines.
func tableEngines(t *testing.T, c *ClickHouse) map[string]string {
	t.Helper()
	rows, err := c.conn.Query(testContext(t), "SELECT name, engine FROM system.tables WHERE database = ?", c.cfg.Database)
	require.NoError(t, err)
	defer rows.Close()
	engines := map[string]string{}
	for rows.Next() {
		var name, engine string
		require.NoError(t, rows.Scan(&name, &engine))
		engines[name] = engine
	}
	require.NoError(t, rows.Err())
	return engines
}

// A DROP COLUMN file keeps the table's rows, and is safe to run again after
// a crash between the file and its record (18.16 has no DROP COLUMN IF
// EXISTS): 0057 drops address_traces' tx_hash.
func TestDropColumnKeepsRowsAndRepeatsSafely(t *testing.T) {
	ctx := testContext(t)
	c, ms, i := migratedUpTo(t, "0057_drop_address_traces_tx_hash.sql")
	require.NoError(t, c.execSQL(ctx, "INSERT INTO address_traces (chain_id, address, block_number, tx_index, trace_index, tx_hash, version)"+
		" SELECT '1', '0xaa', 7, 1, 2, '0xbb', 1"))
	applied, err := c.migrate(ctx, ms)
	require.NoError(t, err)
	require.Equal(t, ms[i].Name, applied[0])
	exists, err := c.columnExists(ctx, tableAddressTraces, "tx_hash")
	require.NoError(t, err)
	require.False(t, exists)
	var block uint64
	var tx, index uint32
	require.NoError(t, c.conn.QueryRow(ctx, "SELECT block_number, tx_index, trace_index FROM address_traces WHERE address = '0xaa'").
		Scan(&block, &tx, &index))
	require.Equal(t, []any{uint64(7), uint32(1), uint32(2)}, []any{block, tx, index})

	// The file ran but was not recorded: it counts as applied.
	require.NoError(t, c.applyMigration(ctx, ms[i]))
	// Any other failure is still one.
	other := ms[i]
	other.Stmt = "ALTER TABLE no_such_table DROP COLUMN tx_hash"
	require.Error(t, c.applyMigration(ctx, other))
}

// migratedUpTo is a new database migrated up to the numbered file name,
// that file not applied; with the numbered files and name's index.
func migratedUpTo(t *testing.T, name string) (*ClickHouse, []schema.File, int) {
	t.Helper()
	c := openFresh(t)
	ms, err := schema.Numbered()
	require.NoError(t, err)
	i := slices.IndexFunc(ms, func(m schema.File) bool { return m.Name == name })
	require.Positive(t, i, name)
	_, err = c.migrate(testContext(t), ms[:i])
	require.NoError(t, err)
	return c, ms, i
}
