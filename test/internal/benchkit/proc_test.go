package benchkit

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// The CPU line adds utime and stime of /proc/<pid>/stat, counting fields
// from the command name's closing parenthesis (a name may hold both).
func TestStatCPUTicks(t *testing.T) {
	line := "4242 (clickhouse (x) y) S 1 4242 4242 0 -1 4194560 100 0 0 0 1234 567 0 0 20 0 30 0 100 0 0"
	got, err := statCPUTicks(line)
	require.NoError(t, err)
	require.Equal(t, uint64(1234+567), got)
	_, err = statCPUTicks("4242 (short) S 1 2")
	require.Error(t, err)

	// A real stat line parses.
	_, err = CPUSeconds(os.Getpid())
	require.NoError(t, err)
}

func TestPeakRSSOfThisProcess(t *testing.T) {
	mib, err := PeakRSSMiB(os.Getpid())
	require.NoError(t, err)
	require.Positive(t, mib)
}
