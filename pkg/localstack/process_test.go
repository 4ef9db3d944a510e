package localstack

import (
	"net"
	"os"
	"strconv"
	"strings"
	"testing"

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
