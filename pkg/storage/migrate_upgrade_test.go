package storage

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/storage/schema"
)

// firstText0048 is migration 0048 as it was first written (ANY INNER JOIN
// of unaliased subqueries), which databases migrated on 18.16 recorded.
const firstText0048 = "testdata/0048_backfill_token_transfers.first.sql"

// The first text of 0048 is the one mendedMigrations accepts.
func TestMendedChecksumIsTheFirstText(t *testing.T) {
	src, err := os.ReadFile(firstText0048)
	require.NoError(t, err)
	ms, err := schema.Numbered()
	require.NoError(t, err)
	first := schema.File{Version: 48, Name: ms[47].Name, Checksum: schema.Checksum(src)}
	first.Stmt, err = schema.Statement(string(src))
	require.NoError(t, err)
	_, ok := ms[47].Mended(first.Checksum)
	require.True(t, ok, "the first text's checksum %s is accepted", first.Checksum)
	require.NotEqual(t, ms[47].Checksum, first.Checksum)
	_, ok = ms[46].Mended(first.Checksum)
	require.False(t, ok, "only for its own version")
}

// upgradePaths are where the four paths start: a new database, a
// database of each version that ran before the token transfers (0043) and
// before their backfill (0047), and one at 0056 that recorded the first
// text of 0048.
var upgradePaths = []struct {
	name  string
	at    int  // numbered files applied before the data; 0: Migrate from empty
	first bool // 0048 recorded with its first text
}{
	{"fresh", 0, false},
	{"from_0043", 43, false},
	{"from_0047", 47, false},
	{"from_0056_first_0048", 56, true},
}

// Every way a database reaches this binary's schema ends in the same
// tables (SHOW CREATE TABLE) and the same rows, versions included: a
// database written by an older binary and then migrated (its transfers
// made by the backfills 0048-0050) holds what a new database written by
// this binary holds. Versions come from a clock set to one value on every
// path, so the rows can be compared raw, merges stopped.
func TestEveryUpgradePathEndsInTheSameSchemaAndRows(t *testing.T) {
	ms, err := schema.Numbered()
	require.NoError(t, err)
	first, err := os.ReadFile(firstText0048)
	require.NoError(t, err)

	before := make([]*chaindata.BlockData, 0, 12)
	for n := uint64(100); n < 112; n++ {
		before = append(before, transferBlock(n))
	}
	var after []*chaindata.BlockData
	for n := uint64(112); n < 118; n++ {
		after = append(after, withTraces(transferBlock(n)))
	}
	fork := withTraces(forkWith(113, 2, 1, func(*chaindata.BlockData) {}))

	var want *upgradeResult
	for _, p := range upgradePaths {
		ctx := testContext(t)
		c := openDatabase(t, p.name)
		if p.at == 0 {
			require.NoError(t, c.Migrate(ctx))
		} else {
			path := append([]schema.File(nil), ms[:p.at]...)
			if p.first {
				// 18.16 runs the first text as it did; a modern server
				// refuses it, so there the mended statement stands in for
				// it under the first text's record.
				path[47].Checksum = schema.Checksum(first)
				if testCH.Native() {
					path[47].Stmt, err = schema.Statement(string(first))
					require.NoError(t, err)
				}
			}
			_, err := c.migrate(ctx, path)
			require.NoError(t, err)
		}
		stopAllMerges(t, c)
		// The data of the time before the upgrade, written as the binary
		// of that version wrote it: before 0048 without token transfers,
		// before 0051 without traces, before 0062 without topic_heights.
		c.clock.last.Store(1 << 62) // above any wall clock: versions count up from here
		c.cfg.SkipTokenTransfers = p.at != 0 && p.at < 48
		c.beforeTraces = p.at != 0 && p.at < 51
		c.beforeTopics = p.at != 0 && p.at < 62
		require.NoError(t, c.WriteBlocks(ctx, "u", before))
		c.cfg.SkipTokenTransfers, c.beforeTraces, c.beforeTopics = false, false, false

		ran, err := c.migrateFrom(ctx, nil, ms)
		require.NoError(t, err)
		if p.at == 56 {
			var later []string
			for _, m := range ms[56:] {
				later = append(later, m.Name)
			}
			require.Equal(t, later, ran, "a database that recorded the first text of 0048 runs none of the files to 0056 again")
		}
		stopAllMerges(t, c)
		c.clock.last.Store(1<<62 + 1<<40)
		require.NoError(t, c.WriteBlocks(ctx, "u", after))
		require.NoError(t, c.WriteBlocks(ctx, "u", blocksOf(fork)))

		got := &upgradeResult{schema: schemaOf(t, c), rows: tableDigests(t, c)}
		// The records differ only in 0048's checksum on the path that
		// recorded its first text, and in the baseline's marker.
		delete(got.schema.Migrations, 0)
		if p.first {
			require.Equal(t, schema.Checksum(first), got.schema.Migrations[48][1])
			got.schema.Migrations[48] = [2]string{ms[47].Name, ms[47].Checksum}
		}
		require.Positive(t, got.rows["token_transfers"][0], p.name)
		require.Positive(t, got.rows["address_traces"][0], p.name)
		if want == nil {
			want = got
			continue
		}
		require.Equal(t, want.schema, got.schema, "%s: the schema of a new database", p.name)
		require.Equal(t, want.rows, got.rows, "%s: the rows of a new database (count, hash of every column)", p.name)
	}
}

type upgradeResult struct {
	schema dbSchema
	rows   map[string][2]uint64
}

// stopAllMerges stops the merges of every table of c's database, so that
// raw rows stay as they were written.
func stopAllMerges(t *testing.T, c *ClickHouse) {
	t.Helper()
	names, err := c.databaseTables(testContext(t))
	require.NoError(t, err)
	for _, name := range names {
		require.NoError(t, c.execSQL(testContext(t), "SYSTEM STOP MERGES "+c.cfg.Database+"."+name))
	}
}

// tableDigests is, per table of c's database but schema_migrations, its
// raw row count and the sum of a hash of every column of every row but
// the time a mark was written.
func tableDigests(t testing.TB, c *ClickHouse) map[string][2]uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	names, err := c.databaseTables(ctx)
	require.NoError(t, err)
	out := map[string][2]uint64{}
	for _, name := range names {
		if name == tableSchemaMigrations {
			continue
		}
		// DESCRIBE lists the columns in their order (18.16's system.columns
		// has no position).
		rows, err := c.conn.Query(ctx, "DESCRIBE TABLE "+c.cfg.Database+"."+name)
		require.NoError(t, err)
		var cols []string
		for rows.Next() {
			vals := make([]any, len(rows.Columns()))
			var col string
			vals[0] = &col
			for i := 1; i < len(vals); i++ {
				vals[i] = new(string)
			}
			require.NoError(t, rows.Scan(vals...))
			if col != "indexed_at" { // the wall clock of the write
				cols = append(cols, col)
			}
		}
		require.NoError(t, rows.Err())
		rows.Close()
		var n, sum uint64
		q := fmt.Sprintf("SELECT count(), sum(cityHash64(%s)) FROM %s.%s", strings.Join(cols, ", "), c.cfg.Database, name)
		require.NoError(t, c.conn.QueryRow(ctx, q).Scan(&n, &sum), name)
		out[name] = [2]uint64{n, sum}
	}
	return out
}
