package storage

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"go.uber.org/zap"
)

// The baseline is the schema at version baselineVersion, written as one
// CREATE TABLE per table in its final form (baseline/NNNN_<table>.sql, the
// number being the migration that first created the table, so tables are
// created in the order history created them). A database with nothing in
// it gets its tables from there, and not by replaying the numbered files:
// those create tables with 8,192-row granules only to copy them into
// smaller-granule tables, swap the names and drop the old ones (0022-0043).
// Numbered files above baselineVersion then run on top, as on an existing
// database. TestBaselineMatchesTheNumberedMigrations keeps the two paths
// equal; the README ("Migrations") says how to move the baseline.
//
//go:embed baseline/*.sql
var baselineFiles embed.FS

// baselineVersion is the numbered file whose schema the baseline is.
const baselineVersion = 43

// baselineMarker is the schema_migrations version of the row that says a
// database is, or was, created from the baseline. Numbered files start at
// 1, so none has it, and a binary that knows no baseline ignores it.
const baselineMarker = 0

type baseline struct {
	version uint32
	// tables are the files' CREATE TABLE IF NOT EXISTS statements, in
	// file order.
	tables []migration
	// covers are the numbered files 1..version: recorded, with their own
	// checksums, once the tables exist, so that the runner skips them and
	// an edit of one is still refused.
	covers []migration
	// marker is the baselineMarker row, recorded before the first table:
	// named baseline_NNNN, its checksum covering every baseline file.
	marker migration
}

// baselineCreateRE is the only statement a baseline file may hold: a
// baseline creates, and never copies, renames or drops.
var baselineCreateRE = regexp.MustCompile(`(?is)^CREATE\s+TABLE\s+IF\s+NOT\s+EXISTS\s+([A-Za-z_][A-Za-z0-9_]*)\s*\(`)

// loadBaseline reads and checks the baseline files against the numbered
// files ms.
func loadBaseline(fsys fs.FS, dir string, version uint32, ms []migration) (baseline, error) {
	if version < 1 || int(version) > len(ms) {
		return baseline{}, fmt.Errorf("storage: baseline version %04d: the binary has migrations 0001 to %04d", version, len(ms))
	}
	tables, err := readSQLFiles(fsys, dir, "baseline")
	if err != nil {
		return baseline{}, err
	}
	if len(tables) == 0 {
		return baseline{}, fmt.Errorf("storage: no baseline file in %s", dir)
	}
	sum := sha256.New()
	for i, t := range tables {
		table := migrationNameRE.FindStringSubmatch(t.file)[2]
		create := baselineCreateRE.FindStringSubmatch(t.stmt)
		switch {
		case create == nil || create[1] != table:
			return baseline{}, fmt.Errorf("storage: baseline file %q: must be one CREATE TABLE IF NOT EXISTS %s (…)", t.file, table)
		case table == tableSchemaMigrations:
			return baseline{}, fmt.Errorf("storage: baseline file %q: %s is created by Migrate itself", t.file, table)
		case t.version > version:
			return baseline{}, fmt.Errorf("storage: baseline file %q: numbered after the baseline's version %04d", t.file, version)
		case i > 0 && t.version == tables[i-1].version:
			return baseline{}, fmt.Errorf("storage: baseline files %q and %q: one number each", tables[i-1].file, t.file)
		}
		fmt.Fprintf(sum, "%s %s\n", t.file, t.checksum)
	}
	return baseline{
		version: version,
		tables:  tables,
		covers:  ms[:version],
		marker: migration{
			version:  baselineMarker,
			file:     fmt.Sprintf("baseline_%04d", version),
			checksum: hex.EncodeToString(sum.Sum(nil)),
		},
	}, nil
}

// createFromBaseline creates the schema from the baseline when the
// database has none: no numbered file recorded and no table but
// schema_migrations; or the baseline's marker alone, left by a run that
// stopped part-way, which this run finishes (every statement is IF NOT
// EXISTS). The marker is recorded first, then the tables are created, then
// the numbered files the baseline covers are recorded in one insert and
// added to applied. Any other database is an existing one, left to the
// numbered files: a table without a recorded migration may be from a
// migration that crashed before its record, and the baseline's IF NOT
// EXISTS would keep such a table as it is. It returns the baseline files
// it ran.
func (c *db) createFromBaseline(ctx context.Context, b baseline, applied map[uint32]string) ([]string, error) {
	for v := range applied {
		if v != baselineMarker {
			return nil, nil
		}
	}
	log := c.log.With(zap.String("baseline", b.marker.file))
	if sum, started := applied[baselineMarker]; started {
		if sum != b.marker.checksum {
			return nil, fmt.Errorf("storage: database %s was being created from a baseline other than this binary's %s (recorded checksum %.12s…, this binary's %.12s…); the tables it made hold no data: drop them and migrate again",
				c.cfg.Database, b.marker.file, sum, b.marker.checksum)
		}
		log.Info("finishing the schema a previous run began creating from the baseline")
	} else {
		tables, err := c.databaseTables(ctx)
		if err != nil {
			return nil, err
		}
		if len(tables) > 0 {
			log.Info("database has tables but no recorded migration; migrating through the numbered files",
				zap.Strings("tables", tables))
			return nil, nil
		}
		if err := c.recordMigrations(ctx, b.marker); err != nil {
			return nil, err
		}
	}
	start := time.Now()
	var done []string
	for _, t := range b.tables {
		stmt, err := c.ddl(t.stmt)
		if err == nil {
			err = c.execSQL(ctx, stmt)
		}
		if err != nil {
			return done, fmt.Errorf("storage: baseline file %s: %w", t.file, err)
		}
		done = append(done, path.Join("baseline", t.file))
	}
	if err := c.recordMigrations(ctx, b.covers...); err != nil {
		return done, err
	}
	for _, m := range b.covers {
		applied[m.version] = m.checksum
	}
	log.Info("created the schema from the baseline", zap.Uint32("version", b.version),
		zap.Int("tables", len(b.tables)), zap.Duration("elapsed", time.Since(start)))
	return done, nil
}

// databaseTablesQuery lists the tables of a database but
// schema_migrations, which Migrate creates before it looks.
type databaseTablesQuery struct {
	database string
}

func (q databaseTablesQuery) toSQL() (string, []any) {
	return "SELECT name FROM system.tables WHERE database = ? AND name != ? ORDER BY name",
		[]any{q.database, tableSchemaMigrations}
}

func (c *db) databaseTables(ctx context.Context) ([]string, error) {
	var out []string
	err := c.query(ctx, "listing tables", databaseTablesQuery{c.cfg.Database}, func(r driver.Rows) error {
		var name string
		if err := r.Scan(&name); err != nil {
			return err
		}
		out = append(out, name)
		return nil
	})
	return out, err
}
