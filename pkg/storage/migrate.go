package storage

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"go.uber.org/zap"
)

// The schema belongs to the binary: the files are compiled in, so a binary
// always knows exactly which schema it was tested against.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrationNameRE is NNNN_words.sql; the number is the version.
var migrationNameRE = regexp.MustCompile(`^([0-9]{4})_([a-z0-9_]+)\.sql$`)

type migration struct {
	version  uint32
	file     string
	stmt     string
	checksum string
}

// loadMigrations reads and checks every file. Versions must run 1, 2, 3…
// without gaps or repeats: two branches that both add 0006 then fail here
// instead of one silently shadowing the other.
func loadMigrations(fsys fs.FS, dir string) ([]migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("storage: reading migrations: %w", err)
	}
	var out []migration
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		m := migrationNameRE.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, fmt.Errorf("storage: migration file %q: name must be NNNN_lower_words.sql", e.Name())
		}
		v, _ := strconv.ParseUint(m[1], 10, 32)
		src, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("storage: migration file %q: %w", e.Name(), err)
		}
		stmt, err := statementOf(string(src))
		if err != nil {
			return nil, fmt.Errorf("storage: migration file %q: %w", e.Name(), err)
		}
		sum := sha256.Sum256(src)
		out = append(out, migration{
			version:  uint32(v),
			file:     e.Name(),
			stmt:     stmt,
			checksum: hex.EncodeToString(sum[:]),
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	for i, m := range out {
		if want := uint32(i + 1); m.version != want {
			return nil, fmt.Errorf("storage: migration file %q: expected version %04d (versions start at 1, without gaps or repeats)", m.file, want)
		}
	}
	return out, nil
}

// statementOf returns the one statement in a migration file, with comments
// removed and a final `;` dropped. Comments go because clickhouse-go scans
// query text for `?` placeholders and a comment could hold one; a second
// statement is refused because the native protocol runs one per query.
func statementOf(src string) (string, error) {
	var b strings.Builder
	ended := false // a `;` was seen outside literals and comments
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '-' && strings.HasPrefix(src[i:], "--"):
			j := strings.IndexByte(src[i:], '\n')
			if j < 0 {
				i = len(src)
			} else {
				i += j
			}
		case c == '/' && strings.HasPrefix(src[i:], "/*"):
			j := strings.Index(src[i+2:], "*/")
			if j < 0 {
				return "", fmt.Errorf("unterminated /* comment at byte %d", i)
			}
			b.WriteByte(' ')
			i += j + 4
		case c == '\'' || c == '"' || c == '`':
			if ended {
				return "", fmt.Errorf("more than one statement (text after `;` at byte %d)", i)
			}
			j, err := literalEnd(src, i)
			if err != nil {
				return "", err
			}
			b.WriteString(src[i:j])
			i = j
		case c == ';':
			ended = true
			i++
		default:
			if ended && !isSpace(c) {
				return "", fmt.Errorf("more than one statement (text after `;` at byte %d)", i)
			}
			b.WriteByte(c)
			i++
		}
	}
	stmt := strings.TrimSpace(b.String())
	if stmt == "" {
		return "", fmt.Errorf("no statement")
	}
	return stmt, nil
}

// literalEnd returns the index just past the quoted literal starting at
// src[start]. ClickHouse escapes a quote with a backslash or by doubling it.
func literalEnd(src string, start int) (int, error) {
	q := src[start]
	for i := start + 1; i < len(src); i++ {
		switch src[i] {
		case '\\':
			i++
		case q:
			if i+1 < len(src) && src[i+1] == q {
				i++
				continue
			}
			return i + 1, nil
		}
	}
	return 0, fmt.Errorf("unterminated %c literal at byte %d", q, start)
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r'
}

// Migrate brings the schema up to the binary's version: files not yet
// recorded in schema_migrations run in order, each recorded right after it
// runs. Running it again applies nothing.
//
// ClickHouse DDL is not transactional, so a crash between a file and its
// record runs that file again next time; every file must therefore be safe
// to repeat (CREATE … IF NOT EXISTS; a plain ADD COLUMN is skipped when the
// column exists, since 18.16 has no ADD COLUMN IF NOT EXISTS; a backfill
// gives its rows their source rows' versions). A recorded file whose
// content changed is an error: migrations are append-only.
//
// Each statement has its own timeout: QueryTimeout for DDL, MigrateTimeout
// for a backfill, which reads whole tables (backfill). ctx should carry no
// short deadline of its own.
func (c *ClickHouse) Migrate(ctx context.Context) error {
	ms, err := loadMigrations(migrationFiles, "migrations")
	if err != nil {
		return err
	}
	_, err = c.migrate(ctx, ms)
	return err
}

// migrate returns the files it applied, for tests.
func (c *ClickHouse) migrate(ctx context.Context, ms []migration) ([]string, error) {
	create, _ := createSchemaMigrationsStmt{}.toSQL()
	create, err := c.ddl(create)
	if err == nil {
		err = c.execSQL(ctx, create)
	}
	if err != nil {
		return nil, fmt.Errorf("storage: creating %s: %w", tableSchemaMigrations, err)
	}
	applied, err := c.appliedMigrations(ctx)
	if err != nil {
		return nil, err
	}
	var done []string
	for _, m := range ms {
		if sum, ok := applied[m.version]; ok {
			if sum != m.checksum {
				return done, fmt.Errorf("storage: migration %s was changed after it was applied (recorded checksum %.12s…, file %.12s…); add a new migration instead", m.file, sum, m.checksum)
			}
			continue
		}
		if err := c.applyMigration(ctx, m); err != nil {
			return done, fmt.Errorf("storage: migration %s: %w", m.file, err)
		}
		if err := c.recordMigration(ctx, m); err != nil {
			return done, err
		}
		c.log.Info("applied migration", zap.String("migration", m.file), zap.String("database", c.cfg.Database))
		done = append(done, m.file)
	}
	// A newer binary may have migrated already during a rolling deploy;
	// its additions are columns and tables this binary does not use.
	if n := uint32(len(ms)); len(applied) > 0 {
		for v := range applied {
			if v > n {
				c.log.Warn("database schema is newer than this binary",
					zap.Uint32("database_version", v), zap.Uint32("binary_version", n))
				break
			}
		}
	}
	return done, nil
}

// addColumnRE matches a migration that adds one column. 18.16 has no
// ADD COLUMN IF NOT EXISTS, so such a file is made safe to run twice here:
// it is skipped when the column exists.
var addColumnRE = regexp.MustCompile(`(?is)^ALTER\s+TABLE\s+([A-Za-z_][A-Za-z0-9_]*)\s+ADD\s+COLUMN\s+([A-Za-z_][A-Za-z0-9_]*)\s`)

// backfillRE matches a migration that fills a table from others (INSERT …
// SELECT). It reads its source tables whole, which takes minutes per
// hundred million rows, so it runs under MigrateTimeout, not QueryTimeout,
// and logs its progress.
var backfillRE = regexp.MustCompile(`(?is)^INSERT\s+INTO\s+([A-Za-z_][A-Za-z0-9_]*)\s`)

// defaultProgressEvery is how often a running backfill logs its progress.
const defaultProgressEvery = 10 * time.Second

// renameRE matches a migration that renames tables; renamePairRE finds
// its "a TO b" pairs.
var (
	renameRE     = regexp.MustCompile(`(?is)^RENAME\s+TABLE\s`)
	renamePairRE = regexp.MustCompile(`(?is)([A-Za-z_][A-Za-z0-9_]*)\s+TO\s+([A-Za-z_][A-Za-z0-9_]*)`)
)

// dropTableRE matches a migration that drops a table.
var dropTableRE = regexp.MustCompile(`(?is)^DROP\s+TABLE\s+(?:IF\s+EXISTS\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*$`)

// errTableTooBigToDrop is ClickHouse's TABLE_SIZE_EXCEEDS_MAX_DROP_SIZE_LIMIT:
// the server refuses to drop a table over max_table_size_to_drop (50 GB by
// default) unless its operator allows it.
const errTableTooBigToDrop = 359

// applyMigration runs one file's statement. An ADD COLUMN whose column
// exists, or a RENAME whose new names are taken already (a crash between
// the file and its record, or another process migrating at the same time),
// counts as applied.
func (c *ClickHouse) applyMigration(ctx context.Context, m migration) error {
	if sub := backfillRE.FindStringSubmatch(m.stmt); sub != nil {
		return c.backfill(ctx, m, sub[1])
	}
	stmt, err := c.ddl(m.stmt)
	if err != nil {
		return err
	}
	if renameRE.MatchString(m.stmt) {
		return c.rename(ctx, m, stmt)
	}
	if sub := dropTableRE.FindStringSubmatch(m.stmt); sub != nil {
		return c.dropTable(ctx, m, stmt, sub[1])
	}
	sub := addColumnRE.FindStringSubmatch(m.stmt)
	if sub == nil {
		return c.execSQL(ctx, stmt)
	}
	table, column := sub[1], sub[2]
	exists, err := c.columnExists(ctx, table, column)
	if err != nil {
		return err
	}
	if exists {
		c.log.Info("column already exists; migration counted as applied",
			zap.String("migration", m.file), zap.String("table", table), zap.String("column", column))
		return nil
	}
	if err := c.execSQL(ctx, stmt); err != nil {
		// Another process may have added it in between.
		if exists, cerr := c.columnExists(ctx, table, column); cerr == nil && exists {
			return nil
		}
		return err
	}
	return nil
}

// ddl returns a schema statement as this store runs it: unchanged on one
// server, rewritten for the cluster when clickhouse.cluster is set.
func (c *ClickHouse) ddl(stmt string) (string, error) {
	if c.cfg.Cluster == "" {
		return stmt, nil
	}
	return clusterDDL{cluster: c.cfg.Cluster, database: c.cfg.Database}.rewrite(stmt)
}

// backfill runs a migration that fills table, under MigrateTimeout,
// logging what runs, its progress (rows read of the source, from the
// server's progress packets) every progressEvery, and when it is done. The
// deadline also becomes the statement's max_execution_time and the
// connection's read deadline, so neither QueryTimeout nor the driver's
// read timeout cuts it short.
func (c *ClickHouse) backfill(ctx context.Context, m migration, table string) error {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.MigrateTimeout)
	defer cancel()
	var read, total atomic.Uint64
	ctx = clickhouse.Context(ctx, clickhouse.WithProgress(func(p *clickhouse.Progress) {
		read.Add(p.Rows)
		total.Add(p.TotalRows)
	}))
	log := c.log.With(zap.String("migration", m.file), zap.String("table", table))
	log.Info("migration filling a table from indexed data; it reads the source table whole",
		zap.Duration("timeout", c.cfg.MigrateTimeout))
	start := time.Now()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(c.progressEvery)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				log.Info("migration progress", zap.Uint64("rows_read", read.Load()),
					zap.Uint64("rows_total_approx", total.Load()), zap.Duration("elapsed", time.Since(start)))
			}
		}
	}()
	err := c.conn.Exec(ctx, m.stmt)
	close(done)
	wg.Wait()
	if err != nil {
		return fmt.Errorf("filling %s (%d rows read in %s; timeout clickhouse.migrate_timeout %s): %w",
			table, read.Load(), time.Since(start).Round(time.Millisecond), c.cfg.MigrateTimeout, err)
	}
	log.Info("migration filled a table", zap.Uint64("rows_read", read.Load()), zap.Duration("elapsed", time.Since(start)))
	return nil
}

// rename runs a RENAME migration unless it ran already: then the names it
// both frees and takes (a swap's table names) exist and the names it only
// frees (a swap's new tables) are gone. The names it only takes are not
// looked at: a later migration may have dropped one (an old table renamed
// out of the way), and another process migrating at the same time may
// have got that far.
func (c *ClickHouse) rename(ctx context.Context, m migration, stmt string) error {
	pairs := renamePairRE.FindAllStringSubmatch(m.stmt, -1)
	if len(pairs) == 0 {
		return fmt.Errorf("no \"a TO b\" pair in RENAME")
	}
	from, to := map[string]bool{}, map[string]bool{}
	var names []string
	for _, p := range pairs {
		from[p[1]], to[p[2]] = true, true
		names = append(names, p[1], p[2])
	}
	exist, err := c.tablesExist(ctx, names)
	if err != nil {
		return err
	}
	done := true
	for name := range from {
		if to[name] != exist[name] { // a kept name must exist, a freed one must be gone
			done = false
		}
	}
	if done {
		c.log.Info("tables already renamed; migration counted as applied", zap.String("migration", m.file))
		return nil
	}
	return c.execSQL(ctx, stmt)
}

// dropTable runs a DROP TABLE migration. A server that refuses because the
// table is over its max_table_size_to_drop does not stop the migration:
// the table is one a previous migration put out of the way, nothing reads
// it, and the operator is told how to drop it (docs/operations.md).
func (c *ClickHouse) dropTable(ctx context.Context, m migration, stmt, table string) error {
	err := c.execSQL(ctx, stmt)
	var exc *clickhouse.Exception
	if errors.As(err, &exc) && exc.Code == errTableTooBigToDrop {
		c.log.Warn("table not dropped: larger than the server's max_table_size_to_drop; nothing uses it, drop it by hand",
			zap.String("migration", m.file), zap.String("table", table), zap.String("database", c.cfg.Database),
			zap.Error(err))
		return nil
	}
	return err
}

// tablesExist says which of names are tables of the store's database.
func (c *ClickHouse) tablesExist(ctx context.Context, names []string) (map[string]bool, error) {
	out := map[string]bool{}
	err := c.query(ctx, "listing tables", tablesExistQuery{c.cfg.Database, names}, func(r driver.Rows) error {
		var name string
		if err := r.Scan(&name); err != nil {
			return err
		}
		out[name] = true
		return nil
	})
	return out, err
}

func (c *ClickHouse) columnExists(ctx context.Context, table, column string) (bool, error) {
	var n uint64
	if err := c.queryRow(ctx, columnExistsQuery{c.cfg.Database, table, column}, &n); err != nil {
		return false, fmt.Errorf("checking for column %s.%s: %w", table, column, err)
	}
	return n > 0, nil
}

func (c *ClickHouse) appliedMigrations(ctx context.Context) (map[uint32]string, error) {
	ctx, cancel := c.queryContext(ctx)
	defer cancel()
	query, args := appliedMigrationsQuery{}.toSQL()
	rows, err := c.conn.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("storage: reading %s: %w", tableSchemaMigrations, err)
	}
	defer rows.Close()
	out := map[uint32]string{}
	for rows.Next() {
		var (
			v         uint32
			name, sum string
		)
		if err := rows.Scan(&v, &name, &sum); err != nil {
			return nil, fmt.Errorf("storage: reading %s: %w", tableSchemaMigrations, err)
		}
		out[v] = sum
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("storage: reading %s: %w", tableSchemaMigrations, err)
	}
	return out, nil
}

func (c *ClickHouse) recordMigration(ctx context.Context, m migration) error {
	err := c.insert(ctx, insertStmt{tableSchemaMigrations, migrationColumns}, [][]any{{
		m.version, m.file, m.checksum, time.Now().UTC().Truncate(time.Second),
	}})
	if err != nil {
		return fmt.Errorf("storage: recording migration %s in %s: %w", m.file, tableSchemaMigrations, err)
	}
	return nil
}
