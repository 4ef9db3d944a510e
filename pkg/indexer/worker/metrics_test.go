package worker

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/localstack"
)

// The metrics listener serves profiles on loopback, and only there.
func TestMetricsListenerServesProfilesOnLoopbackOnly(t *testing.T) {
	port, err := localstack.FreePort()
	require.NoError(t, err)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	srv, err := serveMetrics(addr, prometheus.NewRegistry(), make(chan error, 1))
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	for _, path := range []string{"/metrics", "/debug/pprof/", "/debug/pprof/cmdline"} {
		resp, err := http.Get("http://" + addr + path)
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
	}

	require.True(t, loopback(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}))
	require.True(t, loopback(&net.TCPAddr{IP: net.IPv6loopback}))
	require.False(t, loopback(&net.TCPAddr{IP: net.IPv4zero}), "0.0.0.0 is every interface")
	require.False(t, loopback(&net.TCPAddr{IP: net.IPv4(10, 1, 2, 3)}))
}
