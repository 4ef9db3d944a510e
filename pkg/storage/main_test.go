package storage

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"github.com/tideline-dev/tideline/pkg/localstack"
)

// testCH is the one real server of this package's tests. Each test gets
// its own database on it, so tests neither see nor clean up each other.
var testCH *localstack.ClickHouse

// TestMain starts ClickHouse once. A missing binary fails the run rather
// than skipping it: storage tests that quietly do not run prove nothing.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "tideline-storage-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "storage tests:", err)
		os.Exit(1)
	}
	testCH, err = localstack.StartClickHouse(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "storage tests need a real ClickHouse:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	testCH.Stop()
	if code == 0 {
		os.RemoveAll(dir)
	} else {
		fmt.Fprintln(os.Stderr, "storage tests: ClickHouse log kept at", testCH.Process.LogPath)
	}
	os.Exit(code)
}

var nonIdent = regexp.MustCompile(`[^A-Za-z0-9_]+`)

// testConfig names a database after the test.
func testConfig(t *testing.T) Config {
	db := "t_" + strings.ToLower(nonIdent.ReplaceAllString(t.Name(), "_"))
	return Config{Addr: testCH.Addr, Database: db, QueryTimeout: time.Minute}
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
