package testkit

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/tideline-dev/tideline/pkg/localstack"
)

// RunWithClickHouse is a TestMain body: it starts one real ClickHouse
// server into *ch, runs the package's tests and stops the server, and
// returns the exit code. A missing binary fails the run instead of skipping
// it: database tests that quietly do not run prove nothing. The server's
// log is kept when a test failed.
//
//	func TestMain(m *testing.M) { os.Exit(testkit.RunWithClickHouse(m, "storage", &testCH)) }
func RunWithClickHouse(m *testing.M, name string, ch **localstack.ClickHouse) int {
	dir, err := os.MkdirTemp("", "tideline-"+name+"-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, name+" tests:", err)
		return 1
	}
	*ch, err = localstack.StartClickHouse(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, name+" tests need a real ClickHouse:", err)
		os.RemoveAll(dir)
		return 1
	}
	code := m.Run()
	(*ch).Stop()
	if code == 0 {
		os.RemoveAll(dir)
	} else {
		fmt.Fprintln(os.Stderr, name+" tests: ClickHouse log kept at", (*ch).Process.LogPath)
	}
	return code
}

var nonIdent = regexp.MustCompile(`[^A-Za-z0-9_]+`)

// Database names a database after the test (prefix, then the test's name
// in lower case with every other character an underscore), so each test
// has a database of its own on the shared server.
func Database(t testing.TB, prefix string) string {
	return prefix + strings.ToLower(nonIdent.ReplaceAllString(t.Name(), "_"))
}
