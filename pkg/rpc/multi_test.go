package rpc_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/tideline-dev/tideline/internal/testkit"
	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/rpc"
)

// fakeClock is the injectable clock of the cooldown tests.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// memClient is an in-memory Client whose answers a test sets per method.
// By default it has every block, with hash memHash(height, fork).
type memClient struct {
	name string
	fork int

	mu       sync.Mutex
	head     func(ctx context.Context) (uint64, error)
	block    func(ctx context.Context, h uint64) (*chaindata.BlockData, error)
	receipts func(ctx context.Context, data *chaindata.BlockData) error
	calls    map[string]int
	closed   int
}

func newMem(name string) *memClient {
	return &memClient{name: name, calls: map[string]int{}}
}

func memHash(height uint64, fork int) string { return fmt.Sprintf("0x%062x%02x", height, fork) }

func (c *memClient) count(method string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[method]
}

func (c *memClient) enter(method string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls[method]++
}

func (c *memClient) setHead(f func(ctx context.Context) (uint64, error)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.head = f
}

func (c *memClient) setBlock(f func(ctx context.Context, h uint64) (*chaindata.BlockData, error)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.block = f
}

func (c *memClient) HeadHeight(ctx context.Context) (uint64, error) {
	c.enter("HeadHeight")
	c.mu.Lock()
	f := c.head
	c.mu.Unlock()
	if f == nil {
		return 1000, nil
	}
	return f(ctx)
}

func (c *memClient) BlockByHeight(ctx context.Context, h uint64) (*chaindata.BlockData, error) {
	c.enter("BlockByHeight")
	c.mu.Lock()
	f := c.block
	c.mu.Unlock()
	if f != nil {
		return f(ctx, h)
	}
	hash := memHash(h, c.fork)
	return &chaindata.BlockData{
		Block:        chaindata.Block{Number: h, Hash: hash},
		Transactions: []chaindata.Transaction{{Hash: memHash(h+1000, c.fork), BlockHash: hash}},
	}, nil
}

func (c *memClient) Receipts(ctx context.Context, data *chaindata.BlockData) error {
	c.enter("Receipts")
	c.mu.Lock()
	f := c.receipts
	c.mu.Unlock()
	if f != nil {
		return f(ctx, data)
	}
	if data.Block.Hash != memHash(data.Block.Number, c.fork) {
		return fmt.Errorf("rpc endpoint %q: receipts of block %s: %w", c.name, data.Block.Hash, rpc.ErrBlockNotFound)
	}
	data.Logs = []chaindata.Log{{BlockHash: data.Block.Hash, TxHash: data.Transactions[0].Hash}}
	return nil
}

func (c *memClient) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed++
}

func unavailable(name, method string) error {
	return &rpc.TransientError{Method: method, Endpoint: name, Attempts: 4, HTTPStatus: http.StatusServiceUnavailable,
		Err: errors.New("503 Service Unavailable")}
}

func notFound(name string, h uint64) error {
	return fmt.Errorf("rpc endpoint %q: block %d: %w", name, h, rpc.ErrBlockNotFound)
}

// hangUntilDone is a head that never comes: the caller's context ends it.
func hangUntilDone(ctx context.Context) (uint64, error) {
	<-ctx.Done()
	return 0, &rpc.TransientError{Method: "eth_blockNumber", Endpoint: "slow", Attempts: 1, Err: ctx.Err()}
}

func fixedHead(h uint64) func(context.Context) (uint64, error) {
	return func(context.Context) (uint64, error) { return h, nil }
}

type multiEnv struct {
	m     *rpc.Multi
	clock *fakeClock
	logs  *observer.ObservedLogs
	reg   *prometheus.Registry
}

func newMultiEnv(t *testing.T, opts rpc.MultiOptions, eps ...rpc.NamedClient) *multiEnv {
	t.Helper()
	env := &multiEnv{clock: newFakeClock(), reg: prometheus.NewRegistry()}
	if opts.Now == nil {
		opts.Now = env.clock.Now
	}
	core, logs := observer.New(zap.DebugLevel)
	env.logs = logs
	m, err := rpc.NewMulti("1", eps, opts, zap.New(core), rpc.NewMetrics(env.reg))
	require.NoError(t, err)
	t.Cleanup(m.Close)
	env.m = m
	return env
}

func named(cs ...*memClient) []rpc.NamedClient {
	out := make([]rpc.NamedClient, len(cs))
	for i, c := range cs {
		out[i] = rpc.NamedClient{Name: c.name, Client: c}
	}
	return out
}

func (env *multiEnv) healthyGauge(t *testing.T, endpoint string) float64 {
	v, found := testkit.Find(t, env.reg, "rpc_endpoint_healthy", map[string]string{"chain_id": "1", "endpoint": endpoint})
	require.True(t, found, "no rpc_endpoint_healthy sample for %s", endpoint)
	return v
}

// ethEndpoint is an *Ethereum client on a fake node, named name.
func ethEndpoint(t *testing.T, name string, n *fakeNode, tweak func(*rpc.EthereumConfig)) rpc.NamedClient {
	t.Helper()
	cfg := fastConfig(n.srv.URL)
	cfg.EndpointName = name
	if tweak != nil {
		tweak(&cfg)
	}
	c, err := rpc.NewEthereum(t.Context(), cfg, zap.NewNop(), nil)
	require.NoError(t, err)
	return rpc.NamedClient{Name: name, Client: c}
}

func always(rep reply) func(string, int, []json.RawMessage) *reply {
	return func(string, int, []json.RawMessage) *reply { return &rep }
}

func TestMultiFailsOverOn503(t *testing.T) {
	a, b := newFakeNode(t), newFakeNode(t)
	a.setFaults(always(reply{status: http.StatusServiceUnavailable}))
	env := newMultiEnv(t, rpc.MultiOptions{Cooldown: time.Minute},
		ethEndpoint(t, "a", a, nil), ethEndpoint(t, "b", b, nil))

	data, err := rpc.FetchBlock(t.Context(), env.m, fakeHeight)
	require.NoError(t, err)
	assert.Equal(t, hash(0xb5), data.Block.Hash)
	assert.Equal(t, uint32(3), data.Block.LogCount)
	assert.Equal(t, 4, a.count("eth_getBlockByNumber"), "a's client retried MaxAttempts times")
	assert.Equal(t, 1, b.count("eth_getBlockByNumber"))
	assert.Equal(t, 0, a.count("eth_getBlockReceipts"), "receipts asked where the block came from")
	assert.Equal(t, 1, b.count("eth_getBlockReceipts"))
	assert.Equal(t, []string{"b"}, env.m.Healthy())
	assert.Equal(t, 0.0, env.healthyGauge(t, "a"))
	assert.Equal(t, 1.0, env.healthyGauge(t, "b"))

	head, err := env.m.HeadHeight(t.Context())
	require.NoError(t, err)
	assert.Equal(t, uint64(fakeHeight), head)
	assert.Equal(t, 0, a.count("eth_blockNumber"), "a is cooling down")

	// Still cooling down: a is not asked at all.
	_, err = rpc.FetchBlock(t.Context(), env.m, fakeHeight)
	require.NoError(t, err)
	assert.Equal(t, 4, a.count("eth_getBlockByNumber"))
	assert.Equal(t, 2, b.count("eth_getBlockByNumber"))

	// After the cooldown a is asked first again, and answers.
	a.setFaults(nil)
	env.clock.Add(time.Minute)
	_, err = rpc.FetchBlock(t.Context(), env.m, fakeHeight)
	require.NoError(t, err)
	assert.Equal(t, 5, a.count("eth_getBlockByNumber"))
	assert.Equal(t, 1, a.count("eth_getBlockReceipts"))
	assert.Equal(t, 2, b.count("eth_getBlockByNumber"))
	assert.Equal(t, []string{"a", "b"}, env.m.Healthy())
	assert.Equal(t, 1.0, env.healthyGauge(t, "a"))
}

func TestMultiFailsOverOnTimeout(t *testing.T) {
	a, b := newFakeNode(t), newFakeNode(t)
	a.setFaults(always(reply{hang: true}))
	short := func(c *rpc.EthereumConfig) {
		c.Timeout = 100 * time.Millisecond
		c.MaxAttempts = 2
	}
	env := newMultiEnv(t, rpc.MultiOptions{}, ethEndpoint(t, "a", a, short), ethEndpoint(t, "b", b, short))

	data, err := env.m.BlockByHeight(t.Context(), fakeHeight)
	require.NoError(t, err)
	assert.Equal(t, uint64(fakeHeight), data.Block.Number)
	assert.Equal(t, 2, a.count("eth_getBlockByNumber"))
	assert.Equal(t, 1, b.count("eth_getBlockByNumber"))
	assert.Equal(t, []string{"b"}, env.m.Healthy())
	warned := env.logs.FilterMessageSnippet("cools down").FilterField(zap.String("endpoint", "a"))
	assert.Equal(t, 1, warned.Len(), "the failing endpoint is logged by name")
}

func TestMultiCooldownIsExponentialAndEnds(t *testing.T) {
	a, b := newMem("a"), newMem("b")
	var aFails atomic.Bool
	aFails.Store(true)
	a.setBlock(func(_ context.Context, h uint64) (*chaindata.BlockData, error) {
		if aFails.Load() {
			return nil, unavailable("a", "eth_getBlockByNumber")
		}
		return &chaindata.BlockData{Block: chaindata.Block{Number: h, Hash: memHash(h, 0)}}, nil
	})
	env := newMultiEnv(t, rpc.MultiOptions{Cooldown: time.Second, MaxCooldown: 4 * time.Second}, named(a, b)...)
	fetch := func() {
		t.Helper()
		_, err := env.m.BlockByHeight(t.Context(), 7)
		require.NoError(t, err)
	}

	fetch() // a fails: 1s cooldown
	assert.Equal(t, 1, a.count("BlockByHeight"))
	assert.Equal(t, 1, b.count("BlockByHeight"))
	assert.Equal(t, []string{"b"}, env.m.Healthy())

	env.clock.Add(999 * time.Millisecond)
	fetch()
	assert.Equal(t, 1, a.count("BlockByHeight"), "skipped while cooling down")

	// Each failure after a cooldown doubles the next: 2s, 4s, then capped.
	tried := 1
	for _, cooldown := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second} {
		env.clock.Add(cooldown - 999*time.Millisecond)
		fetch()
		tried++
		assert.Equal(t, tried, a.count("BlockByHeight"), "tried again once the %v cooldown ended", cooldown)
		env.clock.Add(999 * time.Millisecond)
		if cooldown > time.Second {
			fetch()
			assert.Equal(t, tried, a.count("BlockByHeight"), "still cooling down")
		}
	}
	assert.Equal(t, 0.0, env.healthyGauge(t, "a"))
	// The last failure started a 4s (capped) cooldown; 999ms of it passed.
	env.clock.Add(3 * time.Second)
	assert.Equal(t, []string{"b"}, env.m.Healthy())
	env.clock.Add(time.Millisecond)
	assert.Equal(t, []string{"a", "b"}, env.m.Healthy())

	aFails.Store(false)
	bBefore := b.count("BlockByHeight")
	fetch()
	fetch()
	assert.Equal(t, tried+2, a.count("BlockByHeight"), "a is preferred again")
	assert.Equal(t, bBefore, b.count("BlockByHeight"))
	assert.Equal(t, 1.0, env.healthyGauge(t, "a"))
	assert.Equal(t, 1, env.logs.FilterMessageSnippet("answering again").FilterField(zap.String("endpoint", "a")).Len())

	// Recovered: the next failure starts again from Cooldown.
	aFails.Store(true)
	fetch()
	env.clock.Add(time.Second)
	assert.Equal(t, []string{"a", "b"}, env.m.Healthy())
}

func TestMultiAuthRejectionCoolsDown(t *testing.T) {
	a, b := newMem("a"), newMem("b")
	a.setBlock(func(context.Context, uint64) (*chaindata.BlockData, error) {
		return nil, &rpc.RequestError{Method: "eth_getBlockByNumber", Endpoint: "a", HTTPStatus: http.StatusUnauthorized, Err: errors.New("401 Unauthorized")}
	})
	b.setBlock(func(context.Context, uint64) (*chaindata.BlockData, error) {
		return nil, &rpc.RequestError{Method: "eth_getBlockByNumber", Endpoint: "b", Code: -32602, Err: errors.New("invalid argument")}
	})
	env := newMultiEnv(t, rpc.MultiOptions{}, named(a, b)...)
	_, err := env.m.BlockByHeight(t.Context(), 1)
	var re *rpc.RequestError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, "a", re.Endpoint, "the first endpoint's error")
	assert.Equal(t, []string{"b"}, env.m.Healthy(), "a 401 rejects every request; invalid params says nothing of b")
}

func TestMultiAllEndpointsDown(t *testing.T) {
	a, b := newMem("a"), newMem("b")
	for _, c := range []*memClient{a, b} {
		c.setBlock(func(context.Context, uint64) (*chaindata.BlockData, error) {
			return nil, unavailable(c.name, "eth_getBlockByNumber")
		})
		c.setHead(func(context.Context) (uint64, error) { return 0, unavailable(c.name, "eth_blockNumber") })
	}
	env := newMultiEnv(t, rpc.MultiOptions{}, named(a, b)...)

	_, err := env.m.BlockByHeight(t.Context(), 1)
	require.Error(t, err)
	assert.True(t, rpc.IsTransient(err))
	var tr *rpc.TransientError
	require.ErrorAs(t, err, &tr)
	assert.Equal(t, "a", tr.Endpoint, "the first endpoint's error")
	var all *rpc.AllFailedError
	require.ErrorAs(t, err, &all)
	require.Len(t, all.Errs, 2)
	assert.Equal(t, "b", all.Errs[1].Endpoint)
	assert.Contains(t, err.Error(), `"a"`)
	assert.Contains(t, err.Error(), `"b"`)
	assert.Empty(t, env.m.Healthy())

	// All cooling down: all are tried anyway.
	_, err = env.m.BlockByHeight(t.Context(), 1)
	require.Error(t, err)
	assert.Equal(t, 2, a.count("BlockByHeight"))
	assert.Equal(t, 2, b.count("BlockByHeight"))

	_, err = env.m.HeadHeight(t.Context())
	require.ErrorAs(t, err, &tr)
	assert.True(t, rpc.IsTransient(err))
	assert.Equal(t, 1, a.count("HeadHeight"))
	assert.Equal(t, 1, b.count("HeadHeight"))
}

func TestMultiBlockNotFoundFailsOver(t *testing.T) {
	a, b := newMem("a"), newMem("b")
	a.setBlock(func(_ context.Context, h uint64) (*chaindata.BlockData, error) { return nil, notFound("a", h) })
	env := newMultiEnv(t, rpc.MultiOptions{}, named(a, b)...)

	data, err := rpc.FetchBlock(t.Context(), env.m, 42)
	require.NoError(t, err)
	assert.Equal(t, memHash(42, 0), data.Block.Hash)
	assert.Len(t, data.Logs, 1)
	assert.Equal(t, 1, a.count("BlockByHeight"))
	assert.Equal(t, 0, a.count("Receipts"), "receipts asked first where the block came from")
	assert.Equal(t, 1, b.count("Receipts"))
	assert.Equal(t, []string{"a", "b"}, env.m.Healthy(), "a lagging node is not unhealthy")

	b.setBlock(func(_ context.Context, h uint64) (*chaindata.BlockData, error) { return nil, notFound("b", h) })
	_, err = env.m.BlockByHeight(t.Context(), 43)
	assert.ErrorIs(t, err, rpc.ErrBlockNotFound)
	assert.False(t, rpc.IsTransient(err))
}

func TestMultiMalformedFailsOver(t *testing.T) {
	a, b := newFakeNode(t), newFakeNode(t)
	a.fix.block["gasUsed"] = "0xzz"
	env := newMultiEnv(t, rpc.MultiOptions{}, ethEndpoint(t, "a", a, nil), ethEndpoint(t, "b", b, nil))

	data, err := rpc.FetchBlock(t.Context(), env.m, fakeHeight)
	require.NoError(t, err)
	assert.Equal(t, uint64(125000), data.Block.GasUsed)
	assert.Equal(t, uint32(3), data.Block.LogCount)
	assert.Equal(t, 1, a.count("eth_getBlockByNumber"))
	assert.Equal(t, 1, b.count("eth_getBlockByNumber"))
	assert.Equal(t, []string{"a", "b"}, env.m.Healthy(), "a malformed answer does not cool the endpoint down")

	b.fix.tx(0)["value"] = "0x-1"
	_, err = env.m.BlockByHeight(t.Context(), fakeHeight)
	var mal *rpc.MalformedError
	require.ErrorAs(t, err, &mal)
	assert.Equal(t, "a", mal.Endpoint, "the first endpoint's error")
	assert.Equal(t, "gasUsed", mal.Field)
	var all *rpc.AllFailedError
	require.ErrorAs(t, err, &all)
	require.ErrorAs(t, all.Errs[1].Err, &mal)
	assert.Equal(t, "transactions[0].value", mal.Field)
}

// onOtherFork moves the fake node's block (same height, same transactions)
// to another fork: another block hash everywhere.
func onOtherFork(f *fixture) {
	other := hash(0xc5)
	f.block["hash"] = other
	for i := range f.block["transactions"].([]any) {
		f.tx(i)["blockHash"] = other
	}
	for i, r := range f.receipts {
		r["blockHash"] = other
		for j := range r["logs"].([]any) {
			f.log(i, j)["blockHash"] = other
		}
	}
}

func TestMultiReceiptsFromAnotherForkRejected(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, b *fakeNode)
		check func(t *testing.T, err error)
	}{
		{
			name:  "node looks the hash up",
			setup: func(t *testing.T, b *fakeNode) { onOtherFork(b.fix) },
			check: func(t *testing.T, err error) { assert.ErrorIs(t, err, rpc.ErrBlockNotFound) },
		},
		{
			name: "provider answers by height",
			setup: func(t *testing.T, b *fakeNode) {
				onOtherFork(b.fix)
				raw, err := json.Marshal(b.fix.receipts)
				require.NoError(t, err)
				b.setFaults(func(method string, _ int, _ []json.RawMessage) *reply {
					if method == "eth_getBlockReceipts" {
						return &reply{result: raw}
					}
					return nil
				})
			},
			check: func(t *testing.T, err error) {
				var mal *rpc.MalformedError
				require.ErrorAs(t, err, &mal)
				assert.Equal(t, "b", mal.Endpoint)
				assert.Equal(t, "eth_getBlockReceipts", mal.Method)
				assert.Equal(t, "receipts[0].blockHash", mal.Field)
			},
		},
		{
			name: "per-transaction receipts",
			setup: func(t *testing.T, b *fakeNode) {
				onOtherFork(b.fix)
				b.setFaults(func(method string, _ int, _ []json.RawMessage) *reply {
					if method == "eth_getBlockReceipts" {
						return &reply{code: -32601, message: "Method not found"}
					}
					return nil
				})
			},
			check: func(t *testing.T, err error) {
				var mal *rpc.MalformedError
				require.ErrorAs(t, err, &mal)
				assert.Equal(t, "eth_getTransactionReceipt", mal.Method)
				assert.Equal(t, "receipts[0].blockHash", mal.Field)
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, b := newFakeNode(t), newFakeNode(t)
			tc.setup(t, b)
			env := newMultiEnv(t, rpc.MultiOptions{}, ethEndpoint(t, "a", a, nil), ethEndpoint(t, "b", b, nil))

			data, err := env.m.BlockByHeight(t.Context(), fakeHeight)
			require.NoError(t, err)
			require.Equal(t, hash(0xb5), data.Block.Hash, "the block comes from a")
			a.setFaults(func(method string, _ int, _ []json.RawMessage) *reply {
				if method == "eth_getBlockReceipts" {
					return &reply{status: http.StatusServiceUnavailable}
				}
				return nil
			})

			err = env.m.Receipts(t.Context(), data)
			require.Error(t, err)
			assert.True(t, rpc.IsTransient(err), "the first endpoint's error is returned: %v", err)
			var all *rpc.AllFailedError
			require.ErrorAs(t, err, &all)
			require.Len(t, all.Errs, 2)
			assert.Equal(t, "b", all.Errs[1].Endpoint)
			tc.check(t, all.Errs[1].Err)

			assert.Nil(t, data.Logs, "no receipt data of the other fork")
			for _, tx := range data.Transactions {
				assert.Zero(t, tx.GasUsed)
				assert.Zero(t, tx.Status)
				assert.Empty(t, tx.ReceiptRaw)
			}
		})
	}

	t.Run("same fork is fine", func(t *testing.T) {
		a, b := newFakeNode(t), newFakeNode(t)
		env := newMultiEnv(t, rpc.MultiOptions{}, ethEndpoint(t, "a", a, nil), ethEndpoint(t, "b", b, nil))
		data, err := env.m.BlockByHeight(t.Context(), fakeHeight)
		require.NoError(t, err)
		a.setFaults(always(reply{status: http.StatusServiceUnavailable}))
		require.NoError(t, env.m.Receipts(t.Context(), data))
		assert.Len(t, data.Logs, 3)
		assert.Equal(t, uint8(1), data.Transactions[0].Status)
		assert.Equal(t, 1, b.count("eth_getBlockReceipts"))
		assert.Equal(t, 0, b.count("eth_getBlockByNumber"))
	})
}

func TestMultiPhantomHeadIgnored(t *testing.T) {
	a, b, liar := newMem("a"), newMem("b"), newMem("liar")
	a.setHead(fixedHead(1000))
	b.setHead(fixedHead(1003))
	liar.setHead(fixedHead(50_000_000))
	env := newMultiEnv(t, rpc.MultiOptions{}, named(liar, a, b)...)

	for range 3 {
		head, err := env.m.HeadHeight(t.Context())
		require.NoError(t, err)
		assert.Equal(t, uint64(1003), head)
	}
	warned := env.logs.FilterMessageSnippet("far above").FilterField(zap.String("endpoint", "liar"))
	require.Equal(t, 1, warned.Len(), "logged by name, once while it lasts")
	assert.Equal(t, zap.WarnLevel, warned.All()[0].Level)
	for _, e := range env.logs.All() {
		for _, f := range e.Context {
			if f.Key == "endpoint" {
				assert.Equal(t, "liar", f.String)
			}
		}
	}
	assert.Equal(t, []string{"liar", "a", "b"}, env.m.Healthy(), "it answers: not unhealthy, just not believed")

	// The others do not answer: the liar is not believed alone...
	for _, c := range []*memClient{a, b} {
		c.setHead(func(context.Context) (uint64, error) { return 0, unavailable(c.name, "eth_blockNumber") })
	}
	_, err := env.m.HeadHeight(t.Context())
	require.Error(t, err)
	var all *rpc.AllFailedError
	require.ErrorAs(t, err, &all)
	var mal *rpc.MalformedError
	require.ErrorAs(t, all.Errs[0].Err, &mal)
	assert.Equal(t, "liar", mal.Endpoint)
	assert.Contains(t, mal.Reason, "not believed alone")
	// ...until MaxCooldown (default 5m) after it was last contradicted.
	env.clock.Add(5 * time.Minute)
	head, err := env.m.HeadHeight(t.Context())
	require.NoError(t, err)
	assert.Equal(t, uint64(50_000_000), head, "with nothing to compare to, the only answer stands")

	a.setHead(fixedHead(1000))
	b.setHead(fixedHead(1003))
	env.clock.Add(time.Minute) // a and b cool down no more
	head, err = env.m.HeadHeight(t.Context())
	require.NoError(t, err)
	assert.Equal(t, uint64(1003), head)

	liar.setHead(fixedHead(1005))
	head, err = env.m.HeadHeight(t.Context())
	require.NoError(t, err)
	assert.Equal(t, uint64(1005), head)
	assert.Equal(t, 2, env.logs.FilterMessageSnippet("believed again").Len(), "alone, then within skew")
	assert.Equal(t, 2, env.logs.FilterMessageSnippet("far above").Len())
}

func TestMultiHeadChoice(t *testing.T) {
	cases := []struct {
		name  string
		skew  uint64
		heads []uint64
		want  uint64
	}{
		{"one endpoint", 0, []uint64{50_000_000}, 50_000_000},
		{"two within skew: freshest", 0, []uint64{1000, 1900}, 1900},
		{"two beyond skew: lower", 0, []uint64{1000, 50_000_000}, 1000},
		{"two beyond skew, liar first: lower", 0, []uint64{50_000_000, 1000}, 1000},
		{"configured skew", 10, []uint64{1000, 1011}, 1000},
		{"configured skew, within", 10, []uint64{1000, 1010}, 1010},
		{"a stuck node does not drag the head back", 0, []uint64{10, 5000, 5002}, 5002},
		{"two liars out of five", 0, []uint64{1000, 1001, 1002, 9_000_000, 8_000_000}, 1002},
		{"lagging node", 0, []uint64{990, 1000, 1001}, 1001},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var cs []*memClient
			for i, h := range tc.heads {
				c := newMem(fmt.Sprintf("e%d", i))
				c.setHead(fixedHead(h))
				cs = append(cs, c)
			}
			env := newMultiEnv(t, rpc.MultiOptions{MaxHeadSkew: tc.skew}, named(cs...)...)
			head, err := env.m.HeadHeight(t.Context())
			require.NoError(t, err)
			assert.Equal(t, tc.want, head)
		})
	}
}

func TestMultiHeadDoesNotWaitForStragglers(t *testing.T) {
	a, slow := newMem("a"), newMem("slow")
	a.setHead(fixedHead(1000))
	slow.setHead(hangUntilDone)
	env := newMultiEnv(t, rpc.MultiOptions{HeadTimeout: 100 * time.Millisecond}, named(slow, a)...)

	start := time.Now()
	head, err := env.m.HeadHeight(t.Context())
	require.NoError(t, err)
	assert.Equal(t, uint64(1000), head)
	assert.Less(t, time.Since(start), 2*time.Second)
	assert.Equal(t, []string{"a"}, env.m.Healthy(), "no answer within HeadTimeout counts as a failure")

	_, err = env.m.HeadHeight(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 1, slow.count("HeadHeight"), "skipped while cooling down")
	assert.Equal(t, 2, a.count("HeadHeight"))

	t.Run("nobody answers", func(t *testing.T) {
		x, y := newMem("x"), newMem("y")
		x.setHead(hangUntilDone)
		y.setHead(hangUntilDone)
		env := newMultiEnv(t, rpc.MultiOptions{HeadTimeout: 50 * time.Millisecond}, named(x, y)...)
		_, err := env.m.HeadHeight(t.Context())
		require.Error(t, err)
		assert.True(t, rpc.IsTransient(err))
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Empty(t, env.m.Healthy())
	})
	t.Run("caller gives up", func(t *testing.T) {
		x, y := newMem("x"), newMem("y")
		x.setHead(hangUntilDone)
		y.setHead(hangUntilDone)
		env := newMultiEnv(t, rpc.MultiOptions{}, named(x, y)...)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := env.m.HeadHeight(ctx)
		assert.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, []string{"x", "y"}, env.m.Healthy(), "not the endpoints' fault")
	})
}

func TestMultiCallerCancelIsNotFailover(t *testing.T) {
	a, b := newMem("a"), newMem("b")
	ctx, cancel := context.WithCancel(t.Context())
	a.setBlock(func(ctx context.Context, _ uint64) (*chaindata.BlockData, error) {
		cancel()
		return nil, &rpc.TransientError{Method: "eth_getBlockByNumber", Endpoint: "a", Attempts: 1, Err: ctx.Err()}
	})
	env := newMultiEnv(t, rpc.MultiOptions{}, named(a, b)...)
	_, err := env.m.BlockByHeight(ctx, 1)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 0, b.count("BlockByHeight"))
	assert.Equal(t, []string{"a", "b"}, env.m.Healthy())
}

func TestMultiURLNeverShown(t *testing.T) {
	const secret = "secretkey123"
	b := newFakeNode(t)
	b.setFaults(always(reply{status: http.StatusServiceUnavailable}))
	mk := func(name, url string) rpc.NamedClient {
		cfg := fastConfig(url)
		cfg.EndpointName = name
		cfg.MaxAttempts = 2
		c, err := rpc.NewEthereum(t.Context(), cfg, zap.NewNop(), nil)
		require.NoError(t, err)
		return rpc.NamedClient{Name: name, Client: c}
	}
	env := newMultiEnv(t, rpc.MultiOptions{},
		mk("refused", "http://user:"+secret+"@127.0.0.1:1/v3/"+secret), mk("fake", b.srv.URL+"/v3/"+secret))
	_, err := rpc.FetchBlock(t.Context(), env.m, fakeHeight)
	assertNoSecret(t, secret, err, env.logs, env.reg)
	_, err = env.m.HeadHeight(t.Context())
	assertNoSecret(t, secret, err, env.logs, env.reg)
}

func TestNewMultiValidates(t *testing.T) {
	c := newMem("a")
	for name, eps := range map[string][]rpc.NamedClient{
		"no endpoint":  nil,
		"no name":      {{Name: "", Client: c}},
		"same name":    {{Name: "a", Client: c}, {Name: "a", Client: newMem("a")}},
		"nil client":   {{Name: "a"}},
		"nil client 2": {{Name: "a", Client: c}, {Name: "b"}},
	} {
		_, err := rpc.NewMulti("1", eps, rpc.MultiOptions{}, nil, nil)
		assert.Error(t, err, name)
	}
}

func TestMultiCloseClosesAll(t *testing.T) {
	a, b := newMem("a"), newMem("b")
	m, err := rpc.NewMulti("1", named(a, b), rpc.MultiOptions{}, nil, nil)
	require.NoError(t, err)
	m.Close()
	m.Close()
	for _, c := range []*memClient{a, b} {
		c.mu.Lock()
		assert.Equal(t, 1, c.closed, c.name)
		c.mu.Unlock()
	}
}

func TestMultiConcurrentUse(t *testing.T) {
	var cs []*memClient
	for i := range 4 {
		c := newMem(fmt.Sprintf("e%d", i))
		var n atomic.Int64
		c.setBlock(func(_ context.Context, h uint64) (*chaindata.BlockData, error) {
			switch k := n.Add(1); {
			case k%3 == 0:
				return nil, unavailable(c.name, "eth_getBlockByNumber")
			case k%5 == 0:
				return nil, notFound(c.name, h)
			}
			hash := memHash(h, 0)
			return &chaindata.BlockData{
				Block:        chaindata.Block{Number: h, Hash: hash},
				Transactions: []chaindata.Transaction{{Hash: memHash(h+1000, 0), BlockHash: hash}},
			}, nil
		})
		c.setHead(func(context.Context) (uint64, error) {
			k := n.Add(1)
			if k%7 == 0 {
				return 0, unavailable(c.name, "eth_blockNumber")
			}
			if i == 3 {
				return 50_000_000, nil
			}
			return 1000 + uint64(k%10), nil
		})
		cs = append(cs, c)
	}
	env := newMultiEnv(t, rpc.MultiOptions{Cooldown: time.Millisecond, MaxCooldown: 8 * time.Millisecond}, named(cs...)...)

	var wg sync.WaitGroup
	for g := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				env.clock.Add(time.Millisecond)
				switch (g + i) % 3 {
				case 0:
					head, err := env.m.HeadHeight(t.Context())
					if err == nil && head != 50_000_000 { // believed when it answers alone long enough
						assert.Less(t, head, uint64(1010))
						assert.GreaterOrEqual(t, head, uint64(1000))
					}
				case 1:
					data, err := rpc.FetchBlock(t.Context(), env.m, uint64(i))
					if err == nil {
						assert.Len(t, data.Logs, 1)
					} else {
						assert.True(t, rpc.IsTransient(err) || errors.Is(err, rpc.ErrBlockNotFound), "typed: %v", err)
					}
				default:
					_ = env.m.Healthy()
				}
			}
		}()
	}
	wg.Wait()
	assert.False(t, strings.Contains(fmt.Sprint(env.m.Healthy()), "http"))
}
