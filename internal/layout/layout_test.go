package layout

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const module = "github.com/tideline-dev/tideline/"

// deps lists the tideline packages that pattern's packages depend on,
// transitively, test-only imports left out.
func deps(t *testing.T, patterns ...string) []string {
	t.Helper()
	args := append([]string{"list", "-deps", "-f", "{{.ImportPath}}"}, patterns...)
	cmd := exec.Command("go", args...)
	cmd.Dir = "../.."
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go list: %s", out)
	var own []string
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, module) {
			own = append(own, strings.TrimPrefix(p, module))
		}
	}
	return own
}

// The lower layers never import the indexer.
func TestLowerLayersDoNotImportTheIndexer(t *testing.T) {
	for _, p := range deps(t, "./pkg/rpc/...", "./pkg/storage/...", "./pkg/temporal/...", "./pkg/chain/...") {
		require.False(t, strings.HasPrefix(p, "pkg/indexer"), "%s is below pkg/indexer but depended on", p)
	}
}

// pkg/chain is a leaf: every layer may import it.
func TestChainIsALeaf(t *testing.T) {
	require.Equal(t, []string{"pkg/chain"}, deps(t, "./pkg/chain"))
}
