package storage

import (
	"context"
	"fmt"
	"path"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/storage/schema"
)

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
func (c *db) createFromBaseline(ctx context.Context, b schema.Baseline, applied map[uint32]string) ([]string, error) {
	for v := range applied {
		if v != schema.BaselineMarker {
			return nil, nil
		}
	}
	log := c.log.With(zap.String("baseline", b.Marker.Name))
	if sum, started := applied[schema.BaselineMarker]; started {
		if sum != b.Marker.Checksum {
			return nil, fmt.Errorf("storage: database %s was being created from a baseline other than this binary's %s (recorded checksum %.12s…, this binary's %.12s…); the tables it made hold no data: drop them and migrate again",
				c.cfg.Database, b.Marker.Name, sum, b.Marker.Checksum)
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
		if err := c.recordMigrations(ctx, b.Marker); err != nil {
			return nil, err
		}
	}
	start := time.Now()
	var done []string
	for _, t := range b.Tables {
		stmt, err := c.ddl(t.Stmt)
		if err == nil {
			err = c.execSQL(ctx, stmt)
		}
		if err != nil {
			return done, fmt.Errorf("storage: baseline file %s: %w", t.Name, err)
		}
		done = append(done, path.Join("baseline", t.Name))
	}
	if err := c.recordMigrations(ctx, b.Covers...); err != nil {
		return done, err
	}
	for _, m := range b.Covers {
		applied[m.Version] = m.Checksum
	}
	log.Info("created the schema from the baseline", zap.Uint32("version", b.Version),
		zap.Int("tables", len(b.Tables)), zap.Duration("elapsed", time.Since(start)))
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
