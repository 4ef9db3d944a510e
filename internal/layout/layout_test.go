package layout

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const module = "github.com/tideline-dev/tideline/"

// goList runs `go list` from the repository root and returns its output's
// fields.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = "../.."
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go list: %s", out)
	return strings.Fields(string(out))
}

// deps lists the tideline packages that pattern's packages depend on,
// transitively, test-only imports left out.
func deps(t *testing.T, patterns ...string) []string {
	t.Helper()
	var own []string
	for _, p := range goList(t, append([]string{"-deps", "-f", "{{.ImportPath}}"}, patterns...)...) {
		if strings.HasPrefix(p, module) {
			own = append(own, strings.TrimPrefix(p, module))
		}
	}
	return own
}

// packages lists the tideline packages under pkg/ and internal/ that
// keep returns true for, by go list, so that a new package is covered the
// day it is added.
func packages(t *testing.T, keep func(rel string) bool) []string {
	t.Helper()
	var out []string
	for _, p := range goList(t, "./pkg/...", "./internal/...") {
		if rel := strings.TrimPrefix(p, module); keep(rel) {
			out = append(out, rel)
		}
	}
	return out
}

func isIndexer(rel string) bool {
	return rel == "pkg/indexer" || strings.HasPrefix(rel, "pkg/indexer/")
}
func isAPI(rel string) bool { return rel == "pkg/api" || strings.HasPrefix(rel, "pkg/api/") }

// The lower layers never import the indexer; the query API, beside the
// worker on the top floor, is one of them here: it reads what the indexer
// wrote (storage, the status view, the stream), never the indexer itself.
func TestLowerLayersDoNotImportTheIndexer(t *testing.T) {
	lower := packages(t, func(rel string) bool { return !isIndexer(rel) })
	require.Contains(t, lower, "pkg/rpc")
	require.Contains(t, lower, "pkg/simchain")
	require.Contains(t, lower, "pkg/api")
	for _, pkg := range lower {
		for _, p := range deps(t, "./"+pkg) {
			require.False(t, isIndexer(p), "%s depends on %s: a lower layer imports the indexer", pkg, p)
		}
	}
}

// Nothing under pkg/ or internal/ imports the query API: the indexer and
// the API share the stream's event model through pkg/stream, and only the
// binaries (app/) wire the API in.
func TestOnlyTheBinariesImportTheAPI(t *testing.T) {
	others := packages(t, func(rel string) bool { return !isAPI(rel) })
	require.Contains(t, others, "pkg/indexer/worker")
	require.Contains(t, others, "pkg/indexer/jobs/webhook")
	for _, pkg := range others {
		for _, p := range deps(t, "./"+pkg) {
			require.False(t, isAPI(p), "%s depends on %s: only app/ imports the query API", pkg, p)
		}
	}
}

// The side jobs (pkg/indexer/jobs/<job>) import neither each other nor
// the indexing path: a job is read, changed and replaced on its own.
func TestJobsAreIndependent(t *testing.T) {
	const jobs = "pkg/indexer/jobs/"
	list := packages(t, func(rel string) bool { return strings.HasPrefix(rel, jobs) })
	require.Contains(t, list, jobs+"aggregate")
	for _, job := range list {
		for _, p := range deps(t, "./"+job) {
			if p == job {
				continue
			}
			require.False(t, strings.HasPrefix(p, jobs), "%s depends on %s: jobs do not import each other", job, p)
			for _, path := range []string{"pkg/indexer/activity", "pkg/indexer/workflow", "pkg/indexer/worker"} {
				require.NotEqual(t, path, p, "%s depends on %s: a job does not import the indexing path", job, p)
			}
		}
	}
}

// pkg/chaindata (the chain's data model) is a leaf: every layer may import
// it.
func TestChainDataIsALeaf(t *testing.T) {
	require.Equal(t, []string{"pkg/chaindata"}, deps(t, "./pkg/chaindata"))
}

// maxLines is how long a non-test file may be: what a reader holds in
// their head at once.
const maxLines = 450

// readmeAbove is the size (non-test lines) above which a package has a
// README.md with its goal, parts and rules.
const readmeAbove = 300

// Every non-test Go file fits in a head, and every package of more than
// readmeAbove lines says what it is in a README.
func TestFilesAndPackagesStayReadable(t *testing.T) {
	for _, dir := range goList(t, "-f", "{{.Dir}}", "./...") {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		require.NoError(t, err)
		total := 0
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			n := lineCount(t, f)
			total += n
			require.LessOrEqual(t, n, maxLines, "%s has %d lines: cut it by concept", rel(t, f), n)
		}
		if total > readmeAbove {
			_, err := os.Stat(filepath.Join(dir, "README.md"))
			require.NoError(t, err, "%s has %d non-test lines and no README.md (goal, parts, rules)", rel(t, dir), total)
		}
	}
}

func lineCount(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		n++
	}
	require.NoError(t, sc.Err())
	return n
}

// rel is path relative to the repository root, for messages.
func rel(t *testing.T, path string) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	r, err := filepath.Rel(root, path)
	require.NoError(t, err)
	return r
}
