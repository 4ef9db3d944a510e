package storage

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/tideline-dev/tideline/pkg/storage/schema"
	"go.uber.org/zap"
)

// How Migrate runs each kind of numbered file: the statement is
// recognised by its first words, and every kind that 18.16 cannot make
// idempotent in SQL (ADD and DROP COLUMN, RENAME) or that needs another
// timeout (INSERT … SELECT) or may be refused by the server (DROP) gets
// its rule here. A table rebuilt with other settings uses all four:
// create under a new name, copy, swap the names, drop the old table
// (0022-0043).

// addColumnRE matches a migration that adds one column. 18.16 has no
// ADD COLUMN IF NOT EXISTS, so such a file is made safe to run twice here:
// it is skipped when the column exists.
var addColumnRE = regexp.MustCompile(`(?is)^ALTER\s+TABLE\s+([A-Za-z_][A-Za-z0-9_]*)\s+ADD\s+COLUMN\s+([A-Za-z_][A-Za-z0-9_]*)\s`)

// dropColumnRE matches a migration that drops one column, skipped when
// the column is gone for the same reason (18.16 has no DROP COLUMN IF
// EXISTS).
var dropColumnRE = regexp.MustCompile(`(?is)^ALTER\s+TABLE\s+([A-Za-z_][A-Za-z0-9_]*)\s+DROP\s+COLUMN\s+([A-Za-z_][A-Za-z0-9_]*)\s*$`)

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
// exists, a DROP COLUMN whose column is gone, or a RENAME whose new names
// are taken already (a crash between the file and its record, or another
// process migrating at the same time), counts as applied.
func (c *db) applyMigration(ctx context.Context, m schema.File) error {
	if sub := backfillRE.FindStringSubmatch(m.Stmt); sub != nil {
		return c.backfill(ctx, m, sub[1])
	}
	stmt, err := c.ddl(m.Stmt)
	if err != nil {
		return err
	}
	if renameRE.MatchString(m.Stmt) {
		return c.rename(ctx, m, stmt)
	}
	if sub := dropTableRE.FindStringSubmatch(m.Stmt); sub != nil {
		return c.dropTable(ctx, m, stmt, sub[1])
	}
	if sub := addColumnRE.FindStringSubmatch(m.Stmt); sub != nil {
		return c.alterColumn(ctx, m, stmt, sub[1], sub[2], true)
	}
	if sub := dropColumnRE.FindStringSubmatch(m.Stmt); sub != nil {
		return c.alterColumn(ctx, m, stmt, sub[1], sub[2], false)
	}
	return c.execSQL(ctx, stmt)
}

// alterColumn runs an ADD COLUMN (add) or DROP COLUMN migration unless
// the column is already there (or gone): a crash between the file and its
// record, or another process migrating at the same time.
func (c *db) alterColumn(ctx context.Context, m schema.File, stmt, table, column string, add bool) error {
	done := func() (bool, error) {
		exists, err := c.columnExists(ctx, table, column)
		if err != nil || add || exists {
			return exists == add, err
		}
		// Gone, but from a table that is there: a missing table is an error
		// the statement will name.
		tables, err := c.tablesExist(ctx, []string{table})
		return tables[table], err
	}
	ok, err := done()
	if err != nil {
		return err
	}
	if ok {
		c.log.Info("column already added or dropped; migration counted as applied",
			zap.String("migration", m.Name), zap.String("table", table), zap.String("column", column))
		return nil
	}
	if err := c.execSQL(ctx, stmt); err != nil {
		// Another process may have done it in between.
		if ok, cerr := done(); cerr == nil && ok {
			return nil
		}
		return err
	}
	return nil
}

// backfill runs a migration that fills table, under MigrateTimeout,
// logging what runs, its progress (rows read of the source, from the
// server's progress packets) every progressEvery, and when it is done. The
// deadline also becomes the statement's max_execution_time and the
// connection's read deadline, so neither QueryTimeout nor the driver's
// read timeout cuts it short.
func (c *db) backfill(ctx context.Context, m schema.File, table string) error {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.MigrateTimeout)
	defer cancel()
	var read, total atomic.Uint64
	// The insert settings of every write (settings.go): a copy keeps every
	// row as the write path wrote it. Without optimize_on_insert = 0 a
	// modern server folds rows of one key inside the copy (a rebuild's
	// copy lost row versions that way), and without async_insert = 0 a
	// 26.2+ server may return before the rows are in.
	ctx = clickhouse.Context(ctx, clickhouse.WithSettings(c.settings), clickhouse.WithProgress(func(p *clickhouse.Progress) {
		read.Add(p.Rows)
		total.Add(p.TotalRows)
	}))
	log := c.log.With(zap.String("migration", m.Name), zap.String("table", table))
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
	err := c.conn.Exec(ctx, m.Stmt)
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
func (c *db) rename(ctx context.Context, m schema.File, stmt string) error {
	pairs := renamePairRE.FindAllStringSubmatch(m.Stmt, -1)
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
		c.log.Info("tables already renamed; migration counted as applied", zap.String("migration", m.Name))
		return nil
	}
	return c.execSQL(ctx, stmt)
}

// dropTable runs a DROP TABLE migration. A server that refuses because the
// table is over its max_table_size_to_drop does not stop the migration:
// the table is one a previous migration put out of the way, nothing reads
// it, and the operator is told how to drop it (docs/operations.md).
func (c *db) dropTable(ctx context.Context, m schema.File, stmt, table string) error {
	err := c.execSQL(ctx, stmt)
	var exc *clickhouse.Exception
	if errors.As(err, &exc) && exc.Code == errTableTooBigToDrop {
		c.log.Warn("table not dropped: larger than the server's max_table_size_to_drop; nothing uses it, drop it by hand",
			zap.String("migration", m.Name), zap.String("table", table), zap.String("database", c.cfg.Database),
			zap.Error(err))
		return nil
	}
	return err
}

// tablesExist says which of names are tables of the store's database.
func (c *db) tablesExist(ctx context.Context, names []string) (map[string]bool, error) {
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

func (c *db) columnExists(ctx context.Context, table, column string) (bool, error) {
	var n uint64
	if err := c.queryRow(ctx, columnExistsQuery{c.cfg.Database, table, column}, &n); err != nil {
		return false, fmt.Errorf("checking for column %s.%s: %w", table, column, err)
	}
	return n > 0, nil
}
