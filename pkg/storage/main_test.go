package storage

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"github.com/tideline-dev/tideline/internal/testkit"
	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/localstack"
)

// testCH is the one real server of this package's tests. Each test gets
// its own database on it, so tests neither see nor clean up each other.
var testCH *localstack.ClickHouse

// TestMain starts ClickHouse once; a missing binary fails the run.
func TestMain(m *testing.M) { os.Exit(testkit.RunWithClickHouse(m, "storage", &testCH)) }

// testConfig names a database after the test.
func testConfig(t *testing.T) config.ClickHouse {
	db := testkit.Database(t, "t_")
	return config.ClickHouse{Addr: testCH.Addr, Protocol: testCH.Protocol, Database: db, QueryTimeout: testkit.QueryBound}
}

// openTest opens a migrated store on a database of its own. The server's
// data dir is new for every run, so the database starts empty.
func openTest(t *testing.T) *ClickHouse {
	t.Helper()
	ctx := testContext(t)
	c, err := Open(ctx, testConfig(t), zaptest.NewLogger(t))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Close()) })
	require.NoError(t, c.Migrate(ctx))
	return c
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testkit.QueryBound)
	t.Cleanup(cancel)
	return ctx
}

// mergeFully starts the tables' merges and merges each down to one part per
// partition. OPTIMIZE … FINAL alone does not promise that: on 18.16 it
// returns at once, merging nothing, when a background merge (just allowed
// by START MERGES) holds the parts, and that merge ends later. So each
// table is optimized until every partition has one active part.
func mergeFully(t *testing.T, c *ClickHouse, tables ...string) {
	t.Helper()
	ctx := testContext(t)
	for _, table := range tables {
		require.NoError(t, c.execSQL(ctx, "SYSTEM START MERGES "+c.cfg.Database+"."+table))
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			if !assert.NoError(ct, c.execSQL(ctx, "OPTIMIZE TABLE "+c.cfg.Database+"."+table+" FINAL")) {
				return
			}
			var most uint64
			err := c.conn.QueryRow(ctx, "SELECT max(n) FROM (SELECT count() AS n FROM system.parts "+
				"WHERE database = ? AND table = ? AND active GROUP BY partition)", c.cfg.Database, table).Scan(&most)
			if assert.NoError(ct, err) {
				assert.LessOrEqual(ct, most, uint64(1), "active parts in a partition of %s", table)
			}
		}, 30*time.Second, 50*time.Millisecond)
	}
}
