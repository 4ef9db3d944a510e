package integration

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/tideline-dev/tideline/pkg/indexer/worker"
)

// A worker asked to stop while its chains are still starting stops
// cleanly (nil), not as a failure to start: its chain's endpoint accepts
// the connection and never answers, and the stop comes once the worker
// asks it for its head.
func TestStopWhileChainsStartIsClean(t *testing.T) {
	t.Parallel() // see README.md, "Serial and parallel tests"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	asked := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			asked <- c // held open, never answered
		}
	}()
	cfg := chainConfig("it-stop-starting", "http://"+ln.Addr().String())
	require.NoError(t, cfg.Validate())
	claimChain(t, "it-stop-starting")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- worker.Run(ctx, cfg, zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))) }()
	select {
	case c := <-asked:
		t.Cleanup(func() { _ = c.Close() })
	case err := <-done:
		t.Fatalf("the worker ended before asking its endpoint: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("the worker never asked its endpoint")
	}
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err, "a stop during start-up is a stop")
	case <-time.After(30 * time.Second):
		t.Fatal("the worker did not stop")
	}
}
