package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A shell that burns CPU in a grandchild and whose child ends right after
// it: the samples must account for the command's rusage once, not twice
// (the shell's cutime gets the grandchild's CPU with the child's when both
// end within one sample), and not lose the grandchild's CPU either.
func TestSamplesCountEachProcessOnce(t *testing.T) {
	out := t.TempDir()
	// A waits for B, B for C; C loops, then B ends at once ("; true" keeps
	// sh from exec'ing C in B's place), and A lives on to reap B, as make
	// does go test and go test its test binary.
	script := `sh -c "sh -c 'i=0; while [ \$i -lt 2000000 ]; do i=\$((i+1)); done'; true"; sleep 0.5`
	prof, wall, total, code := profileOf(t, out, []string{"sh", "-c", script})
	require.Zero(t, code)
	require.Greater(t, total, 500*time.Millisecond, "the loop must burn enough CPU to be sampled (wall %s)", wall)
	ratio := prof.sampled.Seconds() / total.Seconds()
	require.InDelta(t, 1.0, ratio, 0.2, "sampled %s of a total %s", prof.sampled, total)
}

// The report names the command, its totals and the kinds it saw.
func TestReportSaysTotalsAndKinds(t *testing.T) {
	out := t.TempDir()
	_, _, _, code := profileOf(t, out, []string{"sh", "-c", "exit 3"})
	require.Equal(t, 3, code, "the command's exit code is testprofile's")
	rep, err := os.ReadFile(filepath.Join(out, "report.txt"))
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(strings.TrimSpace(string(rep)), "== testprofile: sh -c exit 3"), "%s", rep)
	require.Contains(t, string(rep), "CPU of the command and all it started")
}

func TestKindOf(t *testing.T) {
	for _, c := range []struct{ comm, argv0, want string }{
		{"integration.tes", "/tmp/go-build1/b001/integration.test", "test binary"},
		{"clickhouse-serv", "/usr/bin/clickhouse-server", "clickhouse"},
		{"chdb-http", "/x/.tideline/bin/chdb-http", "chdb"},
		{"temporal", "/x/.tideline/bin/temporal", "temporal"},
		{"anvil", "/x/anvil", "chain node"},
		{"compile", "/usr/local/go/pkg/tool/linux_amd64/compile", "go toolchain"},
		{"make", "make", "other"},
	} {
		require.Equal(t, c.want, kindOf(c.comm, c.argv0), "%s %s", c.comm, c.argv0)
	}
}

// profileOf runs args under run's machinery with a fast sampler and
// returns the profile, the wall and rusage totals and the exit code.
func profileOf(t *testing.T, out string, args []string) (*profile, time.Duration, time.Duration, int) {
	t.Helper()
	var got *profile
	var wall, total time.Duration
	code, err := runWith(out, 100*time.Millisecond, 5, args, func(p *profile, w, tot time.Duration) {
		got, wall, total = p, w, tot
	})
	require.NoError(t, err)
	return got, wall, total, code
}
