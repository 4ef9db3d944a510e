package storage

import (
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"github.com/tideline-dev/tideline/internal/testkit"
)

func TestLoadBaselineChecksFiles(t *testing.T) {
	ms := []migration{{version: 1, file: "0001_a.sql"}, {version: 2, file: "0002_b.sql"}, {version: 3, file: "0003_c.sql"}}
	create := func(table string) *fstest.MapFile {
		return &fstest.MapFile{Data: []byte("-- why\nCREATE TABLE IF NOT EXISTS " + table + "\n(\n    a UInt8\n)\nENGINE = ReplacingMergeTree\nORDER BY a;\n")}
	}
	ok := fstest.MapFS{"b/0002_t2.sql": create("t2"), "b/0001_t1.sql": create("t1")}
	b, err := loadBaseline(ok, "b", 2, ms)
	require.NoError(t, err)
	require.Equal(t, []string{"0001_t1.sql", "0002_t2.sql"}, []string{b.tables[0].file, b.tables[1].file})
	require.Equal(t, ms[:2], b.covers)
	require.Equal(t, migration{version: baselineMarker, file: "baseline_0002", checksum: b.marker.checksum}, b.marker)
	require.Len(t, b.marker.checksum, 64)

	other, err := loadBaseline(fstest.MapFS{"b/0001_t1.sql": create("t1")}, "b", 2, ms)
	require.NoError(t, err)
	require.NotEqual(t, b.marker.checksum, other.marker.checksum, "the marker's checksum covers every file")

	for name, tc := range map[string]struct {
		fsys    fstest.MapFS
		version uint32
		err     string
	}{
		"version past the files": {ok, 4, "the binary has migrations 0001 to 0003"},
		"version zero":           {ok, 0, "the binary has migrations 0001 to 0003"},
		"no file":                {fstest.MapFS{"b/x/0001_t.sql": create("t")}, 2, "no baseline file"},
		"bad name":               {fstest.MapFS{"b/t1.sql": create("t1")}, 2, "name must be NNNN_lower_words.sql"},
		"name is not the table":  {fstest.MapFS{"b/0001_t1.sql": create("t2")}, 2, "must be one CREATE TABLE IF NOT EXISTS t1"},
		"without IF NOT EXISTS":  {fstest.MapFS{"b/0001_t1.sql": {Data: []byte("CREATE TABLE t1 (a UInt8) ENGINE = Memory")}}, 2, "must be one CREATE TABLE IF NOT EXISTS t1"},
		"a copy":                 {fstest.MapFS{"b/0001_t1.sql": {Data: []byte("INSERT INTO t1 (a) SELECT a FROM t0")}}, 2, "must be one CREATE TABLE"},
		"a swap":                 {fstest.MapFS{"b/0001_t1.sql": {Data: []byte("RENAME TABLE t0 TO t1")}}, 2, "must be one CREATE TABLE"},
		"a drop":                 {fstest.MapFS{"b/0001_t1.sql": {Data: []byte("DROP TABLE IF EXISTS t1")}}, 2, "must be one CREATE TABLE"},
		"two statements":         {fstest.MapFS{"b/0001_t1.sql": {Data: []byte("CREATE TABLE IF NOT EXISTS t1 (a UInt8) ENGINE = Memory; DROP TABLE t0")}}, 2, "more than one statement"},
		"schema_migrations":      {fstest.MapFS{"b/0001_schema_migrations.sql": create("schema_migrations")}, 2, "created by Migrate itself"},
		"numbered past version":  {fstest.MapFS{"b/0003_t3.sql": create("t3")}, 2, "numbered after the baseline's version 0002"},
		"number repeated":        {fstest.MapFS{"b/0001_t1.sql": create("t1"), "b/0001_t2.sql": create("t2")}, 2, "one number each"},
	} {
		_, err := loadBaseline(tc.fsys, "b", tc.version, ms)
		require.ErrorContains(t, err, tc.err, name)
	}
}

// The embedded baseline loads and creates every table the numbered files
// leave, on one server and on a cluster.
func TestEmbeddedBaselineLoads(t *testing.T) {
	ms, err := loadMigrations(migrationFiles, "migrations")
	require.NoError(t, err)
	b, err := loadBaseline(baselineFiles, "baseline", baselineVersion, ms)
	require.NoError(t, err)
	require.Len(t, b.covers, baselineVersion)
	require.Equal(t, "baseline_0043", b.marker.file)
	cluster := clusterDDL{cluster: "tl", database: "tideline"}
	for _, m := range b.tables {
		got, err := cluster.rewrite(m.stmt)
		require.NoError(t, err, m.file)
		require.Contains(t, got, " ON CLUSTER tl", m.file)
		require.Regexp(t, `ENGINE = Replicated\w*MergeTree\('/clickhouse/tables/\{shard\}/tideline/`, got, m.file)
	}
}

// schema is what the tests compare between databases: every table's
// SHOW CREATE TABLE with the database's name replaced, and what
// schema_migrations records (version → name and checksum).
type schema struct {
	Tables     map[string]string
	Migrations map[uint32][2]string
}

func schemaOf(t *testing.T, c *ClickHouse) schema {
	t.Helper()
	ctx := testContext(t)
	s := schema{Tables: map[string]string{}, Migrations: map[uint32][2]string{}}
	names, err := c.databaseTables(ctx)
	require.NoError(t, err)
	for _, name := range append(names, tableSchemaMigrations) {
		var create string
		require.NoError(t, c.conn.QueryRow(ctx, "SHOW CREATE TABLE "+c.cfg.Database+"."+name).Scan(&create))
		s.Tables[name] = strings.ReplaceAll(create, c.cfg.Database+".", "DB.")
	}
	rows, err := c.conn.Query(ctx, "SELECT version, any(name), any(checksum) FROM schema_migrations GROUP BY version")
	require.NoError(t, err)
	defer rows.Close()
	for rows.Next() {
		var v uint32
		var name, sum string
		require.NoError(t, rows.Scan(&v, &name, &sum))
		s.Migrations[v] = [2]string{name, sum}
	}
	require.NoError(t, rows.Err())
	return s
}

// openDatabase opens a store on a database named after the test and kind.
func openDatabase(t *testing.T, kind string) *ClickHouse {
	t.Helper()
	cfg := testConfig(t)
	cfg.Database = testkit.Database(t, "t_") + "_" + kind
	c, err := Open(testContext(t), cfg, zaptest.NewLogger(t))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// recordingConn keeps every statement sent through it.
type recordingConn struct {
	driver.Conn
	mu   sync.Mutex
	sent []string
}

func (r *recordingConn) record(query string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sent = append(r.sent, query)
}

func (r *recordingConn) Exec(ctx context.Context, query string, args ...any) error {
	r.record(query)
	return r.Conn.Exec(ctx, query, args...)
}

func (r *recordingConn) Query(ctx context.Context, query string, args ...any) (driver.Rows, error) {
	r.record(query)
	return r.Conn.Query(ctx, query, args...)
}

func (r *recordingConn) QueryRow(ctx context.Context, query string, args ...any) driver.Row {
	r.record(query)
	return r.Conn.QueryRow(ctx, query, args...)
}

func (r *recordingConn) PrepareBatch(ctx context.Context, query string, opts ...driver.PrepareBatchOption) (driver.Batch, error) {
	r.record(query)
	return r.Conn.PrepareBatch(ctx, query, opts...)
}

// What a fresh Migrate may send: schema_migrations' own statements, the
// look at the database's tables, and creates.
var baselineStatementRE = regexp.MustCompile(`(?s)^(CREATE TABLE IF NOT EXISTS \w+\s|SELECT .* FROM (schema_migrations|system\.tables) |INSERT INTO schema_migrations )`)

// The numbered files and the baseline end in the same schema: the same
// tables, each with the same SHOW CREATE TABLE, and the same numbered
// files recorded. A fresh database sends creates only (no copy, RENAME or
// DROP) and records the baseline's marker as well. A baseline stopped
// part-way is finished by the next run; a database with a table and no
// record is not taken for empty and goes through the numbered files.
func TestBaselineMatchesTheNumberedMigrations(t *testing.T) {
	ctx := testContext(t)
	ms, err := loadMigrations(migrationFiles, "migrations")
	require.NoError(t, err)
	base, err := loadBaseline(baselineFiles, "baseline", baselineVersion, ms)
	require.NoError(t, err)
	var baselineRun, numberedFiles []string
	for _, m := range base.tables {
		baselineRun = append(baselineRun, "baseline/"+m.file)
	}
	for _, m := range ms {
		numberedFiles = append(numberedFiles, m.file)
	}
	// The numbered files above the baseline run on top of it, on a fresh
	// database too: their statements (and, for an ADD COLUMN, the check
	// that the column is missing) and creates are the ones it may send
	// besides the baseline's.
	aboveSent, aboveCreates, aboveAlters := map[string]bool{}, 0, false
	for _, m := range ms[baselineVersion:] {
		baselineRun = append(baselineRun, m.file)
		aboveSent[m.stmt] = true
		switch {
		case strings.HasPrefix(m.stmt, "CREATE"):
			aboveCreates++
		case strings.HasPrefix(m.stmt, "ALTER TABLE"):
			aboveAlters = true
		}
	}
	columnCheck, _ := columnExistsQuery{}.toSQL()

	numbered := openDatabase(t, "numbered")
	start := time.Now()
	applied, err := numbered.migrate(ctx, ms)
	require.NoError(t, err)
	t.Logf("a fresh database through the %d numbered files: %s", len(ms), time.Since(start).Round(time.Millisecond))
	require.Equal(t, numberedFiles, applied)
	want := schemaOf(t, numbered)
	require.Len(t, want.Migrations, len(ms))
	require.Contains(t, want.Migrations, uint32(len(ms)), "the last file is recorded")
	// The baseline adds its marker and nothing else.
	withMarker := schema{Tables: want.Tables, Migrations: map[uint32][2]string{baselineMarker: {base.marker.file, base.marker.checksum}}}
	for v, m := range want.Migrations {
		withMarker.Migrations[v] = m
	}

	t.Run("fresh", func(t *testing.T) {
		c := openDatabase(t, "fresh")
		rec := &recordingConn{Conn: c.conn}
		c.conn = rec
		start := time.Now()
		require.NoError(t, c.Migrate(ctx))
		t.Logf("a fresh database from the baseline: %s", time.Since(start).Round(time.Millisecond))
		c.conn = rec.Conn
		got := schemaOf(t, c)
		require.Equal(t, withMarker, got)
		creates := 0
		for _, stmt := range rec.sent {
			if !aboveSent[stmt] && !(aboveAlters && stmt == columnCheck) {
				require.Regexp(t, baselineStatementRE, stmt)
			}
			if strings.HasPrefix(stmt, "CREATE") {
				creates++
			}
		}
		require.Equal(t, 1+len(base.tables)+aboveCreates, creates, "schema_migrations, then each table once")
		for _, name := range []string{"blocks_g8192", "blocks_g256", "logs_g512", "address_logs_g1024"} {
			require.NotContains(t, got.Tables, name)
		}

		// Again: nothing to do.
		applied, err := c.migrateFrom(ctx, &base, ms)
		require.NoError(t, err)
		require.Empty(t, applied)
	})

	t.Run("baseline stopped part-way", func(t *testing.T) {
		c := openDatabase(t, "half")
		create, _ := createSchemaMigrationsStmt{}.toSQL()
		require.NoError(t, c.execSQL(ctx, create))
		require.NoError(t, c.recordMigrations(ctx, base.marker))
		for _, m := range base.tables[:3] {
			require.NoError(t, c.execSQL(ctx, m.stmt))
		}
		applied, err := c.migrateFrom(ctx, &base, ms)
		require.NoError(t, err)
		require.Equal(t, baselineRun, applied, "the baseline is run again, whole")
		require.Equal(t, withMarker, schemaOf(t, c))
	})

	t.Run("a table without a record", func(t *testing.T) {
		// 0001 ran, and the process stopped before recording it.
		c := openDatabase(t, "unrecorded")
		require.NoError(t, c.execSQL(ctx, ms[0].stmt))
		applied, err := c.migrateFrom(ctx, &base, ms)
		require.NoError(t, err)
		require.Equal(t, numberedFiles, applied)
		require.Equal(t, want, schemaOf(t, c))
	})

	t.Run("another baseline stopped part-way", func(t *testing.T) {
		c := openDatabase(t, "other")
		create, _ := createSchemaMigrationsStmt{}.toSQL()
		require.NoError(t, c.execSQL(ctx, create))
		other := base.marker
		other.checksum = "another"
		require.NoError(t, c.recordMigrations(ctx, other))
		err := c.Migrate(ctx)
		require.ErrorContains(t, err, "was being created from a baseline other than this binary's baseline_0043")
		tables, err := c.databaseTables(ctx)
		require.NoError(t, err)
		require.Empty(t, tables)
	})
}
