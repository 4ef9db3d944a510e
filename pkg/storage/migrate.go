package storage

import (
	"context"
	"fmt"
	"time"

	"github.com/tideline-dev/tideline/pkg/storage/schema"
	"go.uber.org/zap"
)

// Migrate brings the schema up to the binary's version. A database with
// nothing in it gets the baseline's tables, in their final form, and the
// record that the numbered files up to the baseline's version are applied
// (migrate_baseline.go); then numbered files not yet recorded in
// schema_migrations run in order, each recorded right after it runs.
// Running it again applies nothing.
//
// ClickHouse DDL is not transactional, so a crash between a file and its
// record runs that file again next time; every file must therefore be safe
// to repeat (CREATE … IF NOT EXISTS; a plain ADD COLUMN is skipped when the
// column exists, since 18.16 has no ADD COLUMN IF NOT EXISTS; a backfill
// gives its rows their source rows' versions). A recorded file whose
// content changed is an error: migrations are append-only, but for the
// earlier texts of a mended file (mendedMigrations).
//
// Each statement has its own timeout: QueryTimeout for DDL, MigrateTimeout
// for a backfill, which reads whole tables (backfill). ctx should carry no
// short deadline of its own.
func (c *ClickHouse) Migrate(ctx context.Context) error {
	ms, err := schema.Numbered()
	if err != nil {
		return err
	}
	base, err := schema.Embedded(ms)
	if err != nil {
		return err
	}
	_, err = c.migrateFrom(ctx, &base, ms)
	return err
}

// migrate runs the numbered files ms only, whatever the database holds,
// so that tests can stop at any file. It returns the files it applied.
func (c *db) migrate(ctx context.Context, ms []schema.File) ([]string, error) {
	return c.migrateFrom(ctx, nil, ms)
}

// migrateFrom is Migrate with the baseline base (nil: none); it returns
// the baseline files (baseline/NNNN_<table>.sql) and numbered files it
// applied, in order, for tests.
func (c *db) migrateFrom(ctx context.Context, base *schema.Baseline, ms []schema.File) ([]string, error) {
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
	if base != nil {
		if done, err = c.createFromBaseline(ctx, *base, applied); err != nil {
			return done, err
		}
	}
	for _, m := range ms {
		if sum, ok := applied[m.Version]; ok {
			if why, ok := m.Mended(sum); ok && sum != m.Checksum {
				c.log.Info("migration recorded with an earlier text of its file, which did what the file does now; nothing to run",
					zap.String("migration", m.Name), zap.String("recorded_checksum", sum[:12]), zap.String("why_it_changed", why))
				continue
			}
			if sum != m.Checksum {
				return done, fmt.Errorf("storage: migration %s was changed after it was applied (recorded checksum %.12s…, file %.12s…); add a new migration instead", m.Name, sum, m.Checksum)
			}
			continue
		}
		if err := c.applyMigration(ctx, m); err != nil {
			return done, fmt.Errorf("storage: migration %s: %w", m.Name, err)
		}
		if err := c.recordMigrations(ctx, m); err != nil {
			return done, err
		}
		c.log.Info("applied migration", zap.String("migration", m.Name), zap.String("database", c.cfg.Database))
		done = append(done, m.Name)
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

// ddl returns a schema statement as this store runs it: unchanged on one
// server, rewritten for the cluster when clickhouse.cluster is set.
func (c *db) ddl(stmt string) (string, error) {
	if c.cfg.Cluster == "" {
		return stmt, nil
	}
	return clusterDDL{cluster: c.cfg.Cluster, database: c.cfg.Database}.rewrite(stmt)
}

func (c *db) appliedMigrations(ctx context.Context) (map[uint32]string, error) {
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

// recordMigrations records ms in one insert: all of them or none.
func (c *db) recordMigrations(ctx context.Context, ms ...schema.File) error {
	now := time.Now().UTC().Truncate(time.Second)
	rows := make([][]any, len(ms))
	for i, m := range ms {
		rows[i] = []any{m.Version, m.Name, m.Checksum, now}
	}
	if err := c.insert(ctx, insertStmt{tableSchemaMigrations, migrationColumns}, rows); err != nil {
		what := ms[0].Name
		if len(ms) > 1 {
			what += " to " + ms[len(ms)-1].Name
		}
		return fmt.Errorf("storage: recording migration %s in %s: %w", what, tableSchemaMigrations, err)
	}
	return nil
}
