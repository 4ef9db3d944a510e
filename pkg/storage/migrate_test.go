package storage

import (
	"io/fs"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"
)

func TestStatementOf(t *testing.T) {
	cases := []struct {
		name, src, want, err string
	}{
		{name: "comments and trailing semicolon go", src: "-- why ? @x\nCREATE TABLE t (a UInt8) -- trailing ?\nENGINE = Memory;\n", want: "CREATE TABLE t (a UInt8) \nENGINE = Memory"},
		{name: "block comment", src: "/* a ; b ? */ SELECT 1", want: "SELECT 1"},
		{name: "semicolon in literal stays", src: "SELECT 'a;b', \"c;d\", `e;f`;", want: "SELECT 'a;b', \"c;d\", `e;f`"},
		{name: "escaped quotes", src: `SELECT 'it\'s', 'it''s' ;`, want: `SELECT 'it\'s', 'it''s'`},
		{name: "comment marker in literal stays", src: "SELECT '--x', '/*y*/'", want: "SELECT '--x', '/*y*/'"},
		{name: "comment after semicolon is fine", src: "SELECT 1; -- done\n", want: "SELECT 1"},
		{name: "two statements", src: "SELECT 1; SELECT 2", err: "more than one statement"},
		{name: "literal after semicolon", src: "SELECT 1; 'x'", err: "more than one statement"},
		{name: "empty", src: "-- nothing\n ; ", err: "no statement"},
		{name: "unterminated literal", src: "SELECT 'x", err: "unterminated ' literal"},
		{name: "unterminated comment", src: "SELECT 1 /* x", err: "unterminated /* comment"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := statementOf(tc.src)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestLoadMigrationsChecksNames(t *testing.T) {
	ok := fstest.MapFS{
		"m/0002_b.sql": {Data: []byte("SELECT 2")},
		"m/0001_a.sql": {Data: []byte("SELECT 1;")},
	}
	ms, err := loadMigrations(ok, "m")
	require.NoError(t, err)
	require.Len(t, ms, 2)
	require.Equal(t, "0001_a.sql", ms[0].file)
	require.Equal(t, "SELECT 1", ms[0].stmt)
	require.Equal(t, uint32(2), ms[1].version)

	for name, fsys := range map[string]fstest.MapFS{
		"gap":       {"m/0001_a.sql": {Data: []byte("SELECT 1")}, "m/0003_c.sql": {Data: []byte("SELECT 3")}},
		"repeat":    {"m/0001_a.sql": {Data: []byte("SELECT 1")}, "m/0001_b.sql": {Data: []byte("SELECT 1")}},
		"bad name":  {"m/1_a.sql": {Data: []byte("SELECT 1")}},
		"two stmts": {"m/0001_a.sql": {Data: []byte("SELECT 1; SELECT 2")}},
	} {
		_, err := loadMigrations(fsys, "m")
		require.Error(t, err, name)
	}
}

func TestEmbeddedMigrationsLoad(t *testing.T) {
	ms, err := loadMigrations(migrationFiles, "migrations")
	require.NoError(t, err)
	files, err := fs.Glob(migrationFiles, "migrations/*.sql")
	require.NoError(t, err)
	require.Len(t, ms, len(files), "every file is a migration")
	require.GreaterOrEqual(t, len(ms), 15)
}

func TestMigrateIsIdempotent(t *testing.T) {
	ctx := testContext(t)
	c, err := Open(ctx, testConfig(t), zaptest.NewLogger(t))
	require.NoError(t, err)
	defer c.Close()
	ms, err := loadMigrations(migrationFiles, "migrations")
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
	more := append(ms, migration{version: uint32(len(ms) + 1), file: "0006_probe.sql",
		stmt: "CREATE TABLE IF NOT EXISTS probe (a UInt8) ENGINE = Memory", checksum: "new"})
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
	ms, err := loadMigrations(migrationFiles, "migrations")
	require.NoError(t, err)
	_, err = c.migrate(ctx, ms)
	require.NoError(t, err)

	ms[1].checksum = "edited"
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
