package rpc_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/internal/testkit"
	"github.com/tideline-dev/tideline/pkg/rpc"
	"github.com/tideline-dev/tideline/pkg/simchain"
)

// switchProxy forwards to one of several nodes behind one URL, as a load
// balancer or a reconfigured provider does; switching keeps the client's
// connections (nothing tells the client that the node changed).
type switchProxy struct {
	srv     *httptest.Server
	mu      sync.Mutex
	targets []*httputil.ReverseProxy
	current atomic.Int32
}

func newSwitchProxy(t *testing.T, urls ...string) *switchProxy {
	p := &switchProxy{}
	for _, u := range urls {
		target, err := url.Parse(u)
		require.NoError(t, err)
		p.targets = append(p.targets, httputil.NewSingleHostReverseProxy(target))
	}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.targets[p.current.Load()].ServeHTTP(w, r)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *switchProxy) use(i int) { p.current.Store(int32(i)) }

// startSim starts a simulated chain with its own chain id (and seed: other
// blocks), 200 heights long.
func startSim(t *testing.T, chainID, seed uint64) *simchain.Sim {
	cfg := simchain.DefaultConfig()
	cfg.ChainID, cfg.Seed, cfg.Length, cfg.TxsPerBlock, cfg.LogsPerTx = chainID, seed, 200, 3, 1
	s, err := simchain.Start(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// An endpoint whose URL starts serving another chain (without a dropped
// connection) is caught by the chain id that comes with every head, block
// and batch of blocks, and by VerifyChain (what the indexer asks before it
// repairs a reorganisation); it is refused until it serves the expected
// chain again, and then used again.
func TestEndpointOfAnotherChainIsRefused(t *testing.T) {
	a, b := startSim(t, 7, 1), startSim(t, 8, 2)
	proxy := newSwitchProxy(t, a.HTTPURL(), b.HTTPURL())
	reg := prometheus.NewRegistry()
	cfg := fastConfig(proxy.srv.URL)
	cfg.ExpectedChainID = 7
	c := newClient(t, cfg, reg)
	var clock atomic.Int64
	clock.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	rpc.SetClock(c, func() time.Time { return time.Unix(0, clock.Load()) })
	ctx := t.Context()
	wrongGauge := func() float64 {
		return testkit.Sum(t, reg, "rpc_endpoint_wrong_chain", map[string]string{"endpoint": "fake"})
	}

	head, err := c.HeadHeight(ctx)
	require.NoError(t, err)
	assert.Equal(t, a.Head(), head)
	for _, r := range c.FetchBlocks(ctx, []uint64{10, 11, 12}) {
		require.NoError(t, r.Err)
		assert.Equal(t, a.BlockHash(r.Height), r.Data.Block.Hash)
	}
	assert.Equal(t, 0.0, wrongGauge())

	// Each kind of request carries its chain id: the switch is caught by
	// the first request whatever it is, before the next recheck.
	var wrong *rpc.WrongChainError
	for _, tc := range []struct {
		name string
		ask  func() error
	}{
		{"batch of blocks", func() error {
			rs := c.FetchBlocks(ctx, []uint64{20, 21})
			for _, r := range rs {
				assert.Nil(t, r.Data, "no block of the other chain is returned")
			}
			return rs[0].Err
		}},
		{"head", func() error { _, err := c.HeadHeight(ctx); return err }},
		{"block", func() error { _, err := rpc.FetchBlock(ctx, c, 30); return err }},
		{"verify", func() error { return c.VerifyChain(ctx) }},
	} {
		proxy.use(1)
		err := tc.ask()
		require.ErrorAs(t, err, &wrong, tc.name)
		assert.Equal(t, uint64(7), wrong.Want)
		assert.Equal(t, uint64(8), wrong.Got)
		assert.Equal(t, "fake", wrong.Endpoint)
		assert.NotContains(t, err.Error(), proxy.srv.URL, "errors name the endpoint, never its URL")
		assert.Equal(t, 1.0, wrongGauge(), tc.name)
		_, err = rpc.FetchBlock(ctx, c, 31)
		require.ErrorAs(t, err, &wrong, "%s: refused without asking while the wrong answer is fresh", tc.name)

		// Back on the right chain: used again once the refusal is stale.
		proxy.use(0)
		clock.Add(int64(11 * time.Second))
		data, err := rpc.FetchBlock(ctx, c, 32)
		require.NoError(t, err, tc.name)
		assert.Equal(t, a.BlockHash(32), data.Block.Hash)
		assert.Equal(t, 0.0, wrongGauge(), tc.name)
	}
	assert.Positive(t, testkit.Sum(t, reg, "rpc_errors_total", map[string]string{"kind": rpc.KindWrongChain}))
}

// With several endpoints, VerifyChain refuses the one on another chain and
// the others serve the requests.
func TestMultiLeavesEndpointOfAnotherChain(t *testing.T) {
	a, b := startSim(t, 7, 1), startSim(t, 8, 2)
	var eps []rpc.NamedClient
	for _, n := range []struct {
		name string
		sim  *simchain.Sim
	}{{"other", b}, {"right", a}} {
		cfg := fastConfig(n.sim.HTTPURL())
		cfg.EndpointName, cfg.ExpectedChainID = n.name, 7
		c, err := rpc.NewEthereum(t.Context(), cfg, nil, nil)
		require.NoError(t, err)
		eps = append(eps, rpc.NamedClient{Name: n.name, Client: c})
	}
	m, err := rpc.NewMulti("1", eps, rpc.MultiOptions{}, nil, nil)
	require.NoError(t, err)
	t.Cleanup(m.Close)

	var wrong *rpc.WrongChainError
	require.ErrorAs(t, m.VerifyChain(t.Context()), &wrong)
	assert.Equal(t, "other", wrong.Endpoint)
	assert.Equal(t, []string{"right"}, m.Healthy())
	data, err := rpc.FetchBlock(t.Context(), m, 40)
	require.NoError(t, err)
	assert.Equal(t, a.BlockHash(40), data.Block.Hash)
}
