// Package integration runs tideline end to end on real services: the
// Temporal dev server, ClickHouse and real nodes (anvil, geth), all on
// 127.0.0.1. Nothing here is mocked; a missing tool fails the run.
package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	gethrpc "github.com/ethereum/go-ethereum/rpc"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/indexer/worker"
	"github.com/tideline-dev/tideline/pkg/localstack"
	"github.com/tideline-dev/tideline/pkg/storage"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// database is the ClickHouse database every test writes to; tests keep
// apart by chain ID.
const database = "tideline_it"

// stack is shared by all tests of the package: starting Temporal and
// ClickHouse once keeps the suite within minutes.
var stack struct {
	dir      string
	temporal *localstack.Temporal
	ch       *localstack.ClickHouse
}

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "tideline-it-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	stack.dir = dir
	stack.temporal, err = localstack.StartTemporal(filepath.Join(dir, "temporal"), localstack.TemporalOptions{
		NoUI: true, SearchAttributes: temporal.SearchAttributeSpecs(),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "integration: start temporal:", err)
		return 1
	}
	defer stack.temporal.Stop()
	stack.ch, err = localstack.StartClickHouse(filepath.Join(dir, "clickhouse"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "integration: start clickhouse:", err)
		return 1
	}
	defer stack.ch.Stop()
	return m.Run()
}

// chainConfig is a configuration for one test chain, tuned so that tests
// converge in seconds: a 1 s HeadScan and short activity timeouts.
func chainConfig(chainID, rpcURL string) *config.Config {
	ch := config.DefaultChain()
	ch.BlockTime = time.Second
	ch.Endpoints = map[string]string{"local": rpcURL}
	ch.HeadScan.Interval = time.Second
	ch.Index.ActivityTimeout = 15 * time.Second
	ch.RPC.RateLimit = 0
	// The seed's scheduler, one workflow per height, which most tests here
	// are about; the range tests turn ranges on.
	ch.Scheduler.RangeSize = 0
	return &config.Config{
		Log:     config.Log{Format: "console", Level: "warn"},
		Metrics: config.Metrics{Listen: ""},
		Temporal: config.Temporal{
			HostPort:  stack.temporal.HostPort,
			Namespace: "default",
		},
		ClickHouse: config.ClickHouse{
			Addr:           stack.ch.Addr,
			Database:       database,
			Username:       "default",
			DialTimeout:    5 * time.Second,
			QueryTimeout:   30 * time.Second,
			MigrateTimeout: 5 * time.Minute,
		},
		// Chains added at runtime are seen within a second.
		Registry: config.Registry{PollInterval: time.Second},
		Chains:   map[string]config.Chain{chainID: ch},
	}
}

// runWorker runs the worker in-process until the test ends.
func runWorker(t testing.TB, cfg *config.Config) {
	t.Helper()
	t.Cleanup(startWorker(t, cfg))
}

// startWorker runs the worker in-process until the returned stop is called.
func startWorker(t testing.TB, cfg *config.Config) (stop func()) {
	t.Helper()
	require.NoError(t, cfg.Validate())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- worker.Run(ctx, cfg, zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))) }()
	return func() {
		cancel()
		require.NoError(t, <-done)
	}
}

// openStore opens the test database through the production store.
func openStore(t testing.TB) *storage.ClickHouse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := storage.Open(ctx, config.ClickHouse{
		Addr: stack.ch.Addr, Database: database, Username: "default",
		DialTimeout: 5 * time.Second, QueryTimeout: 30 * time.Second,
	}, zap.NewNop())
	require.NoError(t, err)
	require.NoError(t, s.Migrate(ctx))
	t.Cleanup(func() { s.Close() })
	return s
}

// rawConn is a plain ClickHouse connection for checks the store does not offer.
func rawConn(t testing.TB) driver.Conn {
	t.Helper()
	conn, err := clickhouse.Open(&clickhouse.Options{
		Addr: []string{stack.ch.Addr},
		Auth: clickhouse.Auth{Database: database, Username: "default"},
	})
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return conn
}

func temporalClient(t testing.TB) client.Client {
	t.Helper()
	c, err := client.Dial(client.Options{HostPort: stack.temporal.HostPort, Namespace: "default"})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

func nodeClient(t testing.TB, url string) *gethrpc.Client {
	t.Helper()
	c, err := gethrpc.Dial(url)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// waitFor polls cond until it holds or the deadline passes; polling a
// condition, not sleeping a guessed time.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	for time.Now().Before(deadline) {
		ok, state := cond()
		if ok {
			return
		}
		last = state
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("timed out after %s waiting for %s (last state: %s)", timeout, what, last)
}

// waitIndexed waits until the chain's watermark reaches height.
func waitIndexed(t testing.TB, s *storage.ClickHouse, chainID string, height uint64, timeout time.Duration) {
	t.Helper()
	waitFor(t, timeout, fmt.Sprintf("%s indexed up to %d", chainID, height), func() (bool, string) {
		wm, found, err := s.Watermark(context.Background(), chainID, 0)
		if err != nil {
			return false, err.Error()
		}
		return found && wm >= height, fmt.Sprintf("watermark=%d found=%v", wm, found)
	})
}
