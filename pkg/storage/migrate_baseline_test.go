package storage

import (
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"github.com/tideline-dev/tideline/internal/testkit"
	"github.com/tideline-dev/tideline/pkg/storage/schema"
)

// The embedded baseline loads and creates every table the numbered files
// leave, on one server and on a cluster.
func TestEmbeddedBaselineLoads(t *testing.T) {
	ms, err := schema.Numbered()
	require.NoError(t, err)
	b, err := schema.Embedded(ms)
	require.NoError(t, err)
	require.Len(t, b.Covers, schema.BaselineVersion)
	require.Equal(t, "baseline_0061", b.Marker.Name)
	cluster := clusterDDL{cluster: "tl", database: "tideline"}
	for _, m := range b.Tables {
		got, err := cluster.rewrite(m.Stmt)
		require.NoError(t, err, m.Name)
		require.Contains(t, got, " ON CLUSTER tl", m.Name)
		require.Regexp(t, `ENGINE = Replicated\w*MergeTree\('/clickhouse/tables/\{shard\}/tideline/`, got, m.Name)
	}
}

// dbSchema is what the tests compare between databases: every table's
// SHOW CREATE TABLE with the database's name replaced, and what
// schema_migrations records (version → name and checksum).
type dbSchema struct {
	Tables     map[string]string
	Migrations map[uint32][2]string
}

func schemaOf(t *testing.T, c *ClickHouse) dbSchema {
	t.Helper()
	ctx := testContext(t)
	s := dbSchema{Tables: map[string]string{}, Migrations: map[uint32][2]string{}}
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
	ms, err := schema.Numbered()
	require.NoError(t, err)
	base, err := schema.Embedded(ms)
	require.NoError(t, err)
	var baselineRun, numberedFiles []string
	for _, m := range base.Tables {
		baselineRun = append(baselineRun, "baseline/"+m.Name)
	}
	for _, m := range ms {
		numberedFiles = append(numberedFiles, m.Name)
	}
	// The numbered files above the baseline run on top of it, on a fresh
	// database too: their statements (and, for an ADD COLUMN, the check
	// that the column is missing) and creates are the ones it may send
	// besides the baseline's.
	aboveSent, aboveCreates, aboveAlters := map[string]bool{}, 0, false
	for _, m := range ms[schema.BaselineVersion:] {
		baselineRun = append(baselineRun, m.Name)
		aboveSent[m.Stmt] = true
		switch {
		case strings.HasPrefix(m.Stmt, "CREATE"):
			aboveCreates++
		case strings.HasPrefix(m.Stmt, "ALTER TABLE"):
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
	withMarker := dbSchema{Tables: want.Tables, Migrations: map[uint32][2]string{schema.BaselineMarker: {base.Marker.Name, base.Marker.Checksum}}}
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
		require.Equal(t, 1+len(base.Tables)+aboveCreates, creates, "schema_migrations, then each table once")
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
		require.NoError(t, c.recordMigrations(ctx, base.Marker))
		for _, m := range base.Tables[:3] {
			require.NoError(t, c.execSQL(ctx, m.Stmt))
		}
		applied, err := c.migrateFrom(ctx, &base, ms)
		require.NoError(t, err)
		require.Equal(t, baselineRun, applied, "the baseline is run again, whole")
		require.Equal(t, withMarker, schemaOf(t, c))
	})

	t.Run("a table without a record", func(t *testing.T) {
		// 0001 ran, and the process stopped before recording it.
		c := openDatabase(t, "unrecorded")
		require.NoError(t, c.execSQL(ctx, ms[0].Stmt))
		applied, err := c.migrateFrom(ctx, &base, ms)
		require.NoError(t, err)
		require.Equal(t, numberedFiles, applied)
		require.Equal(t, want, schemaOf(t, c))
	})

	t.Run("another baseline stopped part-way", func(t *testing.T) {
		c := openDatabase(t, "other")
		create, _ := createSchemaMigrationsStmt{}.toSQL()
		require.NoError(t, c.execSQL(ctx, create))
		other := base.Marker
		other.Checksum = "another"
		require.NoError(t, c.recordMigrations(ctx, other))
		err := c.Migrate(ctx)
		require.ErrorContains(t, err, "was being created from a baseline other than this binary's baseline_0061")
		tables, err := c.databaseTables(ctx)
		require.NoError(t, err)
		require.Empty(t, tables)
	})
}
