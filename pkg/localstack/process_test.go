package localstack

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// FreePort's ports can be listened on and lie outside the kernel's
// ephemeral range, so no outgoing connection takes one while a server on
// it restarts.
func TestFreePortIsOutsideTheEphemeralRange(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	require.NoError(t, err)
	f := strings.Fields(string(b))
	require.Len(t, f, 2)
	ephLo, err := strconv.Atoi(f[0])
	require.NoError(t, err)
	ephHi, err := strconv.Atoi(f[1])
	require.NoError(t, err)
	for range 50 {
		p, err := FreePort()
		require.NoError(t, err)
		require.True(t, p < ephLo || p > ephHi, "port %d is in the ephemeral range [%d, %d]", p, ephLo, ephHi)
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		require.NoError(t, err, "port %d", p)
		require.NoError(t, l.Close())
	}
}

// A process killed from elsewhere (as the kernel's OOM killer does) is
// told apart from one stopped on purpose, with how it ended.
func TestEndedOnItsOwnTellsACrashFromAStop(t *testing.T) {
	dir := t.TempDir()
	victim, err := Start("victim", filepath.Join(dir, "victim.log"), "sleep", "600")
	require.NoError(t, err)
	t.Cleanup(victim.Stop)
	stopped, err := Start("stopped", filepath.Join(dir, "stopped.log"), "sleep", "600")
	require.NoError(t, err)

	require.NoError(t, victim.EndedOnItsOwn(), "running")
	require.NoError(t, syscall.Kill(victim.Pid(), syscall.SIGKILL))
	stopped.Stop()
	require.Eventually(t, victim.Exited, 10*time.Second, 10*time.Millisecond)

	var ended *EndedError
	require.ErrorAs(t, victim.EndedOnItsOwn(), &ended)
	require.Equal(t, victim.Pid(), ended.Pid)
	require.Contains(t, ended.Error(), "victim (pid "+strconv.Itoa(victim.Pid())+") ended on its own")
	var exit *exec.ExitError
	require.True(t, errors.As(ended, &exit), "how it ended: %v", ended.Err)
	require.Equal(t, syscall.SIGKILL, exit.Sys().(syscall.WaitStatus).Signal())

	require.True(t, stopped.Exited())
	require.NoError(t, stopped.EndedOnItsOwn(), "a stop that was asked for")
}
