package rpc_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common/hexutil"
	gethrpc "github.com/ethereum/go-ethereum/rpc"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"github.com/tideline-dev/tideline/internal/testkit"
	"github.com/tideline-dev/tideline/pkg/localstack"
	"github.com/tideline-dev/tideline/pkg/rpc"
)

// movingHead is an eth namespace whose eth_blockNumber answers a head the
// test moves, or fails while failing is set; asked counts the answers.
type movingHead struct {
	head    atomic.Uint64
	failing atomic.Bool
	asked   atomic.Int64
}

func (m *movingHead) BlockNumber() (hexutil.Uint64, error) {
	defer m.asked.Add(1)
	if m.failing.Load() {
		return 0, errors.New("head unknown")
	}
	return hexutil.Uint64(m.head.Load()), nil
}

// servePolled runs an http JSON-RPC server with m and returns a client of
// it polling every 5ms.
func servePolled(t *testing.T, m *movingHead, reg prometheus.Registerer) *rpc.Ethereum {
	t.Helper()
	srv := gethrpc.NewServer()
	require.NoError(t, srv.RegisterName("eth", m))
	hs := httptest.NewServer(srv)
	t.Cleanup(func() { hs.Close(); srv.Stop() })
	c, err := rpc.NewEthereum(context.Background(), rpc.EthereumConfig{
		ChainID: "local", EndpointName: "polled", URL: hs.URL + "/secret-key-123",
		HeadPoll: 5 * time.Millisecond, MaxAttempts: 1,
	}, zaptest.NewLogger(t), rpc.NewMetrics(reg))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// polledAfter waits until m has answered two more polls than it had when
// called: whatever head it answered before has then been seen.
func polledAfter(t *testing.T, m *movingHead) {
	t.Helper()
	n := m.asked.Load()
	require.Eventually(t, func() bool { return m.asked.Load() >= n+2 }, 10*time.Second, time.Millisecond)
}

// Over http, new heads come from polls of eth_blockNumber: the head read
// at first, then every height above the last one sent, in order; a lower
// head (a lagging replica) sends nothing; a jump sends only the newest 8
// heights; a renewed subscription goes on above the last height sent; a
// failed poll ends the subscription with a typed error naming the
// endpoint, never its URL, and a failed first poll is a failure to
// subscribe.
func TestPolledHeads(t *testing.T) {
	m := &movingHead{}
	m.head.Store(100)
	reg := prometheus.NewRegistry()
	c := servePolled(t, m, reg)
	ctx := context.Background()

	sctx, stop := context.WithCancel(ctx)
	heads, errs, err := c.SubscribeHeads(sctx)
	require.NoError(t, err)
	require.Equal(t, rpc.Head{Number: 100}, nextHead(t, heads, errs))
	m.head.Store(102)
	require.Equal(t, uint64(101), nextHead(t, heads, errs).Number)
	require.Equal(t, uint64(102), nextHead(t, heads, errs).Number)
	m.head.Store(99)
	polledAfter(t, m)
	m.head.Store(130)
	for want := uint64(123); want <= 130; want++ {
		require.Equal(t, want, nextHead(t, heads, errs).Number, "a jump from 102 to 130 sends 123..130")
	}
	stop()
	require.ErrorIs(t, endOf(t, heads, errs), context.Canceled)

	// Renewed: 130 was sent already, so the next head is 131.
	heads, errs, err = c.SubscribeHeads(ctx)
	require.NoError(t, err)
	polledAfter(t, m)
	m.head.Store(131)
	require.Equal(t, uint64(131), nextHead(t, heads, errs).Number)

	m.failing.Store(true)
	err = endOf(t, heads, errs)
	var re *rpc.RequestError
	require.ErrorAs(t, err, &re)
	require.Equal(t, "polled", re.Endpoint)
	require.NotContains(t, err.Error(), "secret-key-123")
	_, _, err = c.SubscribeHeads(ctx)
	require.ErrorAs(t, err, &re, "the first poll failing is a failure to subscribe")
	require.Positive(t, testkit.Sum(t, reg, "rpc_requests_total", map[string]string{"method": "eth_blockNumber"}))
}

// A real anvil over http: each mined block is announced once, in order,
// by polls.
func TestPolledHeadsOnAnvil(t *testing.T) {
	node, err := localstack.StartAnvil(t.TempDir(), localstack.AnvilOptions{})
	require.NoError(t, err)
	t.Cleanup(node.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := rpc.NewEthereum(ctx, rpc.EthereumConfig{
		ChainID: "local", EndpointName: "anvil-http", URL: node.HTTPURL, HeadPoll: 10 * time.Millisecond,
		ExpectedChainID: 31337,
	}, zaptest.NewLogger(t), nil)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	raw, err := gethrpc.DialContext(ctx, node.HTTPURL)
	require.NoError(t, err)
	defer raw.Close()

	heads, errs, err := c.SubscribeHeads(ctx)
	require.NoError(t, err)
	require.Equal(t, uint64(0), nextHead(t, heads, errs).Number)
	for want := uint64(1); want <= 3; want++ {
		require.NoError(t, raw.CallContext(ctx, nil, "evm_mine"))
		require.Equal(t, want, nextHead(t, heads, errs).Number)
	}
}
