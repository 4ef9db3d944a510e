// Package integration runs tideline end to end on real services: the
// Temporal dev server, ClickHouse and real nodes (anvil, geth), all on
// 127.0.0.1. Nothing here is mocked; a missing tool fails the run.
package integration

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	gethrpc "github.com/ethereum/go-ethereum/rpc"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
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
	var rate float64
	boxScale, rate = measureBoxScale()
	fmt.Fprintf(os.Stderr, "integration: bounds scaled by %.2f (parallel hash rate %.2f GB/s, reference %.2f)\n",
		boxScale, rate/1e9, referenceHashRate/1e9)
	stack.temporal, err = localstack.StartTemporal(filepath.Join(dir, "temporal"), localstack.TemporalOptions{
		NoUI: true, SearchAttributes: temporal.SearchAttributeSpecs(),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "integration: start temporal:", err)
		return 1
	}
	defer stack.temporal.Stop()
	// The deployment's old_parts_lifetime, not the server's 8 minutes: a
	// suite's worth of parts that merges replaced (measured: 19,001 of
	// 19,063 parts, 459,276 files, mid-suite) would otherwise stay for
	// the end, where removing the folder took 96-110 s.
	stack.ch, err = localstack.StartClickHouseWith(filepath.Join(dir, "clickhouse"),
		localstack.ClickHouseOptions{OldPartsLifetime: storage.RecommendedOldPartsLifetime})
	if err != nil {
		fmt.Fprintln(os.Stderr, "integration: start clickhouse:", err)
		return 1
	}
	stopSupervising := make(chan struct{})
	supervised := make(chan struct{})
	go func() { superviseClickHouse(stopSupervising); close(supervised) }()
	defer func() {
		close(stopSupervising)
		<-supervised
		stack.ch.Stop()
	}()
	// The schema, once, before any test. Every worker and store migrates
	// at start too, but two workers migrating a fresh database at once
	// race (migrations hold no lock across processes): a test run alone,
	// first on the fresh server, would see it.
	if err := migrateSchema(); err != nil {
		fmt.Fprintln(os.Stderr, "integration: migrate:", err)
		return 1
	}
	stopWatching := make(chan struct{})
	watched := make(chan struct{})
	go func() { watchTemporal(stopWatching); close(watched) }()
	code := m.Run()
	close(stopWatching)
	<-watched
	// A server that died mid-suite fails every later test with "connection
	// refused"; say which and how, once, at the end where CI shows it.
	if ended := stackEnded(); ended != "" {
		fmt.Fprint(os.Stderr, "integration: ", ended)
		code = 1
	}
	if crashes := clickHouseCrashes(); crashes != "" {
		fmt.Fprint(os.Stderr, "integration: ", crashes)
	}
	if code != 0 {
		fmt.Fprint(os.Stderr, "integration: ", temporalLogReport())
	}
	return code
}

// storeConfig is the suite's database, as the tests' stores open it.
func storeConfig() config.ClickHouse {
	return config.ClickHouse{
		Addr: stack.ch.Addr, Database: database, Username: "default",
		DialTimeout: 5 * time.Second, QueryTimeout: 30 * time.Second,
	}
}

// migrateSchema brings the suite's database to the binary's schema.
func migrateSchema() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s, err := storage.Open(ctx, storeConfig(), zap.NewNop())
	if err != nil {
		return err
	}
	defer s.Close()
	return s.Migrate(ctx)
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
	claimChain(t, slices.Collect(maps.Keys(cfg.Chains))...)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- worker.Run(ctx, cfg, zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))) }()
	return func() {
		cancel()
		require.NoError(t, <-done)
	}
}

// forgetChainsAtEnd removes, when the test ends, the chains it left in
// Temporal, as an operator removing a chain does (temporal.RemoveChain:
// its Schedules deleted, its workflows terminated). The suite shares one
// dev server, and a Schedule outlives the worker that created it: measured
// with three tests' fifteen Schedules left firing every second into queues
// no worker polls, the idle server used 10.7 % of a core against 2.8 %
// with none, so by the end of the suite the leftovers of fifty tests would
// take a core of the two. Registered once per test, after its worker
// stops (cleanups run last-in, first-out), so a test that restarts its
// worker keeps its chain until it ends.
//
// It sweeps every chain in Temporal but those another running test has
// claimed (claimChain): tests that run in parallel (t.Parallel) end at
// different times, and one's end must not take the others' chains. Go
// runs the parallel tests only after every serial one has ended, so a
// serial test's sweep meets no claimed chain and still clears what any
// earlier test left.
func forgetChainsAtEnd(t testing.TB) {
	t.Helper()
	if _, seen := forgetting.LoadOrStore(t, true); seen {
		return
	}
	t.Cleanup(func() {
		forgetting.Delete(t)
		releaseChains(t)
		// A deadline for the listing and one for each chain's removal, not
		// one for the sweep: on a loaded box (the parallel tests beside it,
		// the other packages' stream of make test) one sweep of several
		// leftover chains once outlasted two minutes in all; and scaled to
		// the box as the tests' waits are (pace_test.go): pinned to one
		// core, one chain's removal took over two minutes.
		c, err := client.Dial(client.Options{HostPort: stack.temporal.HostPort, Namespace: "default"})
		if err != nil {
			t.Errorf("forgetting the test's chains: %v", err)
			return
		}
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), scaled(2*time.Minute))
		ids, err := chainsInTemporal(ctx, c)
		cancel()
		if err != nil {
			t.Errorf("forgetting the test's chains: %v", err)
			return
		}
		for _, id := range ids {
			if claimedByOther(t, id) {
				continue
			}
			// Twice: one Temporal call past the SDK's 10-s call deadline (the
			// dev server under both streams of make test) failed a test
			// whose assertions had all passed; removal is idempotent.
			var err error
			for range 2 {
				ctx, cancel := context.WithTimeout(context.Background(), scaled(2*time.Minute))
				_, err = temporal.RemoveChain(ctx, c, "default", id, false)
				cancel()
				if err == nil {
					break
				}
			}
			if err != nil {
				t.Errorf("forgetting chain %s: %v", id, err)
			}
		}
	})
}

var forgetting sync.Map // testing.TB → true while its cleanup is pending

// claims holds which running test owns each chain ID it runs a worker or
// workflows for; guarded by claimsMu.
var (
	claimsMu sync.Mutex
	claims   = map[string]testing.TB{}
)

// claimChain marks the chains as t's until t ends, so that the end of a
// test running beside it (forgetChainsAtEnd) leaves them alone. Every
// worker a test starts claims its chains; a test that makes workflows of
// a chain without a worker claims it itself. The claim ends with the
// test's forgetChainsAtEnd, which it registers (once per test), so no
// claim outlives its test.
func claimChain(t testing.TB, ids ...string) {
	t.Helper()
	forgetChainsAtEnd(t)
	claimsMu.Lock()
	defer claimsMu.Unlock()
	for _, id := range ids {
		if other, ok := claims[id]; ok && !sameTest(other, t) {
			t.Fatalf("chain %s is already %s's: each test owns its chain ID", id, other.Name())
		}
		claims[id] = t
	}
}

func releaseChains(t testing.TB) {
	claimsMu.Lock()
	defer claimsMu.Unlock()
	for id, owner := range claims {
		if owner.Name() == t.Name() {
			delete(claims, id)
		}
	}
}

func claimedByOther(t testing.TB, id string) bool {
	claimsMu.Lock()
	defer claimsMu.Unlock()
	owner, ok := claims[id]
	return ok && !sameTest(owner, t)
}

// sameTest tells whether a and b are one top-level test or its subtests:
// a test's subtests share its chains.
func sameTest(a, b testing.TB) bool {
	top := func(n string) string { return strings.SplitN(n, "/", 2)[0] }
	return top(a.Name()) == top(b.Name())
}

// chainsInTemporal lists the chains that have a Schedule or a running
// workflow: their IDs are "<chain>:<kind>".
func chainsInTemporal(ctx context.Context, c client.Client) ([]string, error) {
	seen := map[string]bool{}
	it, err := c.ScheduleClient().List(ctx, client.ScheduleListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing schedules: %w", err)
	}
	for it.HasNext() {
		s, err := it.Next()
		if err != nil {
			return nil, fmt.Errorf("listing schedules: %w", err)
		}
		if chain, _, ok := strings.Cut(s.ID, ":"); ok {
			seen[chain] = true
		}
	}
	var token []byte
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: "default", Query: "ExecutionStatus = 'Running'", PageSize: 1000, NextPageToken: token,
		})
		if err != nil {
			return nil, fmt.Errorf("listing running workflows: %w", err)
		}
		for _, e := range resp.GetExecutions() {
			if chain, _, ok := strings.Cut(e.GetExecution().GetWorkflowId(), ":"); ok {
				seen[chain] = true
			}
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	ids := make([]string, 0, len(seen))
	for id := range seen {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids, nil
}

// openStore opens the test database through the production store.
func openStore(t testing.TB) *storage.ClickHouse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := storage.Open(ctx, storeConfig(), zap.NewNop())
	require.NoError(t, err, stackEnded())
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
	require.NoError(t, err, stackEnded())
	t.Cleanup(func() { conn.Close() })
	return conn
}

// temporalClient is the test's Temporal client: one per test, however
// often a wait polls with it (each client holds a connection to the
// server until the test ends).
func temporalClient(t testing.TB) client.Client {
	t.Helper()
	if c, ok := temporalClients.Load(t); ok {
		return c.(client.Client)
	}
	c, err := client.Dial(client.Options{HostPort: stack.temporal.HostPort, Namespace: "default"})
	require.NoError(t, err)
	temporalClients.Store(t, c)
	t.Cleanup(func() {
		temporalClients.Delete(t)
		c.Close()
	})
	return c
}

var temporalClients sync.Map // testing.TB → client.Client

func nodeClient(t testing.TB, url string) *gethrpc.Client {
	t.Helper()
	c, err := gethrpc.Dial(url)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// waitFor polls cond until it holds or the deadline passes; polling a
// condition, not sleeping a guessed time. The bound is scaled to the box
// (pace_test.go).
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	waitWithin(t, scaled(timeout), what, cond)
}

// waitWithin is waitFor with a bound that is the design's, not the box's:
// a property that must hold as soon on a slow box (a recovery time set by
// timeouts), never scaled.
func waitWithin(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
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
	if ended := stackEnded(); ended != "" {
		last += "\n" + ended
	}
	t.Fatalf("timed out after %s waiting for %s (last state: %s)", timeout, what, last)
}

// waitIndexed waits until the chain's watermark reaches height.
func waitIndexed(t testing.TB, s *storage.ClickHouse, chainID string, height uint64, timeout time.Duration) {
	t.Helper()
	waitFor(t, timeout, fmt.Sprintf("%s indexed up to %d", chainID, height), indexedUpTo(s, chainID, height))
}

// indexedUpTo is the condition that the chain's watermark reached height.
func indexedUpTo(s *storage.ClickHouse, chainID string, height uint64) func() (bool, string) {
	return func() (bool, string) {
		wm, found, err := s.Watermark(context.Background(), chainID, 0)
		if err != nil {
			return false, err.Error()
		}
		return found && wm >= height, fmt.Sprintf("watermark=%d found=%v", wm, found)
	}
}
