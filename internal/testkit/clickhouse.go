package testkit

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tideline-dev/tideline/pkg/localstack"
)

// EngineEnv names the ClickHouse a package's tests run on (the lanes of
// `make test`): empty or "server" is the installed server (18.16) over the
// native protocol; "chdb" is the modern engine at its own defaults and
// "chdb-<version>" the modern engine at compatibility = '<version>'
// (chdb-24.8: the compose file's server), both over HTTP
// (localstack.StartChDB).
const EngineEnv = "TIDELINE_TEST_CLICKHOUSE"

// StartEngine starts the ClickHouse that EngineEnv names, its state under
// dir.
func StartEngine(dir string) (*localstack.ClickHouse, error) {
	var (
		ch  *localstack.ClickHouse
		err error
	)
	switch lane := os.Getenv(EngineEnv); {
	case lane == "" || lane == "server":
		ch, err = localstack.StartClickHouse(dir)
	case lane == "chdb":
		ch, err = localstack.StartChDB(dir, localstack.ChDBOptions{})
	case strings.HasPrefix(lane, "chdb-"):
		ch, err = localstack.StartChDB(dir, localstack.ChDBOptions{Compatibility: strings.TrimPrefix(lane, "chdb-")})
	default:
		return nil, fmt.Errorf("%s=%q: expected server, chdb or chdb-<version>", EngineEnv, lane)
	}
	if err != nil {
		return nil, err
	}
	protocols.Store(ch.Addr, ch.Protocol)
	return ch, nil
}

// protocols maps the address of each engine StartEngine started to its
// protocol, for the readers of rows.go, which are given an address.
var protocols sync.Map

// RunWithClickHouse is a TestMain body: it starts one real ClickHouse
// (the one EngineEnv names) into *ch, runs the package's tests and stops
// it, and returns the exit code. A missing binary fails the run instead
// of skipping it: database tests that quietly do not run prove nothing.
// The server's log is kept when a test failed.
//
//	func TestMain(m *testing.M) { os.Exit(testkit.RunWithClickHouse(m, "storage", &testCH)) }
func RunWithClickHouse(m *testing.M, name string, ch **localstack.ClickHouse) int {
	dir, err := os.MkdirTemp("", "tideline-"+name+"-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, name+" tests:", err)
		return 1
	}
	*ch, err = StartEngine(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, name+" tests need a real ClickHouse:", err)
		os.RemoveAll(dir)
		return 1
	}
	fmt.Fprintf(os.Stderr, "%s tests: ClickHouse %s (%s) on %s\n", name, (*ch).Engine, (*ch).Protocol, (*ch).Addr)
	code := m.Run()
	(*ch).Stop()
	if code == 0 {
		os.RemoveAll(dir)
	} else {
		fmt.Fprintln(os.Stderr, name+" tests: ClickHouse log kept at", (*ch).Process.LogPath)
	}
	return code
}

// ServerOnly stops a test on the modern engine's lane with what the
// engine cannot show and where that is covered instead (the storage
// README's list of what the lane cannot cover). It is for tests of the
// server itself (users, restarts, replication), never for SQL.
func ServerOnly(t testing.TB, ch *localstack.ClickHouse, why string) {
	t.Helper()
	if !ch.Native() {
		t.Skipf("needs a ClickHouse server (%s); covered on the server lane", why)
	}
}

var nonIdent = regexp.MustCompile(`[^A-Za-z0-9_]+`)

// Database names a database after the test (prefix, then the test's name
// in lower case with every other character an underscore), so each test
// has a database of its own on the shared server.
func Database(t testing.TB, prefix string) string {
	return prefix + strings.ToLower(nonIdent.ReplaceAllString(t.Name(), "_"))
}

// QueryBound is how long the ClickHouse tests let a query, or a test's
// whole context, run before they fail: a failure's deadline, never a
// claim. The modern lanes run beside the integration package in `make
// test`, and chDB answers one query at a time, so a test that takes 20 s
// on an idle box may take three times that there.
const QueryBound = 3 * time.Minute
