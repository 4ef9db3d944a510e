package storage

import (
	"context"
	"os"
	"testing"
	"time"

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
	return config.ClickHouse{Addr: testCH.Addr, Protocol: testCH.Protocol, Database: db, QueryTimeout: time.Minute}
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
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}
