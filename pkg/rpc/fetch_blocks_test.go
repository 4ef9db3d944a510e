package rpc_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	gethrpc "github.com/ethereum/go-ethereum/rpc"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"github.com/tideline-dev/tideline/internal/testkit"
	"github.com/tideline-dev/tideline/pkg/loadgen"
	"github.com/tideline-dev/tideline/pkg/localstack"
	"github.com/tideline-dev/tideline/pkg/rpc"
)

// batchConfig is fastConfig with time for a batch of many heights to be
// answered and decoded under -race on a busy machine.
func batchConfig(url string) rpc.EthereumConfig {
	cfg := fastConfig(url)
	cfg.Timeout = time.Minute
	return cfg
}

func heightsRange(from, to uint64) []uint64 {
	var hs []uint64
	for h := from; h <= to; h++ {
		hs = append(hs, h)
	}
	return hs
}

// requireSameAsSingle checks each batch result against FetchBlock of the
// same height on single: the same data, or an error of the same kind.
func requireSameAsSingle(t *testing.T, single rpc.Client, results []rpc.BlockResult, heights []uint64) {
	t.Helper()
	require.Len(t, results, len(heights))
	for i, r := range results {
		require.Equal(t, heights[i], r.Height, "results are in the order asked")
		want, wantErr := rpc.FetchBlock(t.Context(), single, r.Height)
		if wantErr != nil {
			require.Error(t, r.Err, "height %d", r.Height)
			assert.Nil(t, r.Data, "height %d", r.Height)
			assert.Equal(t, errors.Is(wantErr, rpc.ErrBlockNotFound), errors.Is(r.Err, rpc.ErrBlockNotFound), "height %d: %v", r.Height, r.Err)
			var wantMal, gotMal *rpc.MalformedError
			if errors.As(wantErr, &wantMal) {
				require.ErrorAs(t, r.Err, &gotMal, "height %d", r.Height)
				assert.Equal(t, wantMal, gotMal, "height %d", r.Height)
			}
			var wantReq, gotReq *rpc.RequestError
			if errors.As(wantErr, &wantReq) {
				require.ErrorAs(t, r.Err, &gotReq, "height %d", r.Height)
				assert.Equal(t, wantReq.Code, gotReq.Code)
				assert.Equal(t, wantReq.Method, gotReq.Method)
			}
			continue
		}
		require.NoError(t, r.Err, "height %d", r.Height)
		require.Equal(t, want, r.Data, "height %d", r.Height)
	}
}

func TestFetchBlocksBatchesHeights(t *testing.T) {
	node := newChainNode(t, 70, rpc.GenOptions{Txs: 20, LogsPerTx: 2, Odd: true})
	reg := prometheus.NewRegistry()
	cfg := batchConfig(node.srv.URL)
	c := newClient(t, cfg, reg)

	heights := heightsRange(1, 75) // 71..75 are above the head
	results := c.FetchBlocks(t.Context(), heights)
	// 100 calls per batch: 50 heights per HTTP request.
	assert.Equal(t, 2, node.postCount())
	for _, r := range results[70:] {
		assert.ErrorIs(t, r.Err, rpc.ErrBlockNotFound, "height %d", r.Height)
	}
	assert.Equal(t, 150.0, testkit.Sum(t, reg, "rpc_requests_total", nil), "each call counts, as for the rate limit")
	requireSameAsSingle(t, newClient(t, cfg, nil), results, heights)
	assert.Len(t, results[5].Data.Transactions, 20)
	assert.Len(t, results[5].Data.Logs, 40)
	assert.Nil(t, results[9].Data.Logs, "an empty block")
}

func TestFetchBlocksIsolatesBadHeights(t *testing.T) {
	node := newChainNode(t, 60, rpc.GenOptions{Txs: 3, LogsPerTx: 2})
	var throttled atomic.Int32
	node.setFault(func(method string, height uint64, call int) *reply {
		switch {
		case method == "eth_getBlockByNumber" && height == 7:
			return &reply{result: json.RawMessage(`{"number":"0x8"}`)} // another block
		case method == "eth_getBlockReceipts" && height == 9:
			return &reply{result: json.RawMessage(`[]`)} // too few receipts
		case method == "eth_getBlockReceipts" && height == 12:
			return &reply{result: json.RawMessage(`null`)}
		case method == "eth_getBlockByNumber" && height == 11:
			return &reply{code: -32602, message: "invalid argument"}
		case method == "eth_getBlockByNumber" && height == 13 && throttled.Add(1) == 1:
			// Throttled once, then answered.
			return &reply{code: -32005, message: "limit exceeded"}
		case method == "eth_getBlockByNumber" && height == 14:
			return &reply{code: -32005, message: "limit exceeded"} // always
		}
		return nil
	})
	cfg := batchConfig(node.srv.URL)
	c := newClient(t, cfg, nil)
	heights := heightsRange(1, 60)
	results := c.FetchBlocks(t.Context(), heights)

	bad := map[uint64]bool{7: true, 9: true, 11: true, 12: true, 14: true}
	for _, r := range results {
		if bad[r.Height] {
			assert.Error(t, r.Err, "height %d", r.Height)
			assert.Nil(t, r.Data)
			continue
		}
		require.NoError(t, r.Err, "height %d", r.Height)
		assert.Equal(t, r.Height, r.Data.Block.Number)
	}
	var mal *rpc.MalformedError
	require.ErrorAs(t, results[6].Err, &mal)
	assert.Equal(t, "number", mal.Field)
	require.ErrorAs(t, results[8].Err, &mal)
	assert.Equal(t, "receipts", mal.Field)
	assert.Equal(t, "eth_getBlockReceipts", mal.Method)
	assert.ErrorIs(t, results[11].Err, rpc.ErrBlockNotFound)
	var req *rpc.RequestError
	require.ErrorAs(t, results[10].Err, &req)
	assert.Equal(t, -32602, req.Code)
	var tr *rpc.TransientError
	require.ErrorAs(t, results[13].Err, &tr)
	assert.Equal(t, -32005, tr.Code)
	assert.Equal(t, cfg.MaxAttempts, tr.Attempts)

	// The same errors as one height at a time (height 13's throttling is
	// over by now).
	requireSameAsSingle(t, newClient(t, cfg, nil), results[:13], heights[:13])
}

func TestFetchBlocksRetriesTheRequest(t *testing.T) {
	node := newChainNode(t, 30, rpc.GenOptions{Txs: 2, LogsPerTx: 1})
	posts := 0
	node.setFault(func(method string, height uint64, call int) *reply {
		if method == "eth_getBlockByNumber" && height == 1 {
			posts++
			if posts <= 2 {
				return &reply{status: http.StatusServiceUnavailable}
			}
		}
		return nil
	})
	c := newClient(t, batchConfig(node.srv.URL), nil)
	results := c.FetchBlocks(t.Context(), heightsRange(1, 30))
	for _, r := range results {
		require.NoError(t, r.Err, "height %d", r.Height)
	}
	assert.Equal(t, 3, node.postCount(), "two 503s, then the answer")

	// A request that never succeeds fails its heights only, transiently.
	node.setFault(func(method string, height uint64, call int) *reply {
		if height == 1 {
			return &reply{status: http.StatusServiceUnavailable}
		}
		return nil
	})
	cfg := batchConfig(node.srv.URL)
	cfg.FetchBatch = 10 // heights per request
	c = newClient(t, cfg, nil)
	results = c.FetchBlocks(t.Context(), heightsRange(1, 30))
	for _, r := range results {
		if r.Height <= 10 {
			assert.True(t, rpc.IsTransient(r.Err), "height %d: %v", r.Height, r.Err)
			var tr *rpc.TransientError
			require.ErrorAs(t, r.Err, &tr)
			assert.Equal(t, http.StatusServiceUnavailable, tr.HTTPStatus)
			continue
		}
		require.NoError(t, r.Err, "height %d", r.Height)
	}
}

// A height has one budget of MaxAttempts attempts, whatever fails: the
// transport retries of its request and the rounds that ask a throttled
// call again draw on the same count, so a height is never asked
// MaxAttempts × MaxAttempts times.
func TestFetchBlocksHasOneRetryBudgetPerHeight(t *testing.T) {
	node := newChainNode(t, 10, rpc.GenOptions{Txs: 1, LogsPerTx: 1})
	var asked atomic.Int32
	node.setFault(func(method string, height uint64, call int) *reply {
		if method != "eth_getBlockByNumber" || height != 5 {
			return nil
		}
		if asked.Add(1) <= 2 {
			return &reply{status: http.StatusServiceUnavailable}
		}
		return &reply{code: -32005, message: "limit exceeded"} // then throttled for good
	})
	cfg := batchConfig(node.srv.URL)
	c := newClient(t, cfg, nil)
	results := c.FetchBlocks(t.Context(), []uint64{5})
	require.Len(t, results, 1)
	var tr *rpc.TransientError
	require.ErrorAs(t, results[0].Err, &tr)
	assert.Equal(t, -32005, tr.Code)
	assert.Equal(t, cfg.MaxAttempts, tr.Attempts)
	assert.Equal(t, int32(cfg.MaxAttempts), asked.Load(), "two 503s and the throttled rounds share one budget")
}
func TestFetchBlocksFallsBackToTransactionReceipts(t *testing.T) {
	node := newChainNode(t, 25, rpc.GenOptions{Txs: 4, LogsPerTx: 2, Odd: true})
	node.setFault(func(method string, _ uint64, _ int) *reply {
		if method == "eth_getBlockReceipts" {
			return &reply{code: -32601, message: "the method eth_getBlockReceipts does not exist/is not available"}
		}
		return nil
	})
	cfg := batchConfig(node.srv.URL)
	c := newClient(t, cfg, nil)
	heights := heightsRange(1, 25)
	results := c.FetchBlocks(t.Context(), heights)
	calls := node.count("eth_getBlockReceipts")
	assert.Positive(t, node.count("eth_getTransactionReceipt"))
	// Later batches no longer ask for block receipts.
	c.FetchBlocks(t.Context(), heights)
	assert.Equal(t, calls, node.count("eth_getBlockReceipts"))
	node.setFault(nil)
	requireSameAsSingle(t, newClient(t, cfg, nil), results, heights)
}

func TestFetchBlocksSplitsOversizedAnswers(t *testing.T) {
	node := newChainNode(t, 40, rpc.GenOptions{Txs: 5, LogsPerTx: 2})
	cfg := batchConfig(node.srv.URL)
	// About 15 KB per height: a 20-height answer is too large, 5 fit.
	cfg.MaxResponseBytes = 100 << 10
	c := newClient(t, cfg, nil)
	heights := heightsRange(1, 40)
	results := c.FetchBlocks(t.Context(), heights)
	for _, r := range results {
		require.NoError(t, r.Err, "height %d", r.Height)
	}
	assert.Greater(t, node.postCount(), 2)

	// A single height too large fails alone, as FetchBlock does.
	cfg.MaxResponseBytes = 4 << 10
	c = newClient(t, cfg, nil)
	results = c.FetchBlocks(t.Context(), []uint64{1, 10})
	var mal *rpc.MalformedError
	require.ErrorAs(t, results[0].Err, &mal)
	assert.Equal(t, "response size", mal.Field)
	require.NoError(t, results[1].Err, "an empty block fits")
}

func TestFetchBlocksSecretNeverShown(t *testing.T) {
	node := newChainNode(t, 5, rpc.GenOptions{Txs: 1, LogsPerTx: 1})
	node.setFault(func(string, uint64, int) *reply { return &reply{status: http.StatusUnauthorized} })
	const secret = "s3cr3t-api-key-0123456789"
	cfg := batchConfig(node.srv.URL + "/v3/" + secret)
	c := newClient(t, cfg, nil)
	results := c.FetchBlocks(t.Context(), heightsRange(1, 5))
	for _, r := range results {
		var req *rpc.RequestError
		require.ErrorAs(t, r.Err, &req)
		assert.Equal(t, http.StatusUnauthorized, req.HTTPStatus)
		assert.NotContains(t, r.Err.Error(), secret)
		assert.NotContains(t, r.Err.Error(), node.srv.URL)
	}
}

func TestMultiFetchBlocksFailsOver(t *testing.T) {
	// "lagging" has heights up to 20 only; "full" has all 30; "down" is
	// unreachable.
	lagging := newChainNode(t, 20, rpc.GenOptions{Txs: 2, LogsPerTx: 1})
	full := newChainNode(t, 30, rpc.GenOptions{Txs: 2, LogsPerTx: 1})
	down := newChainNode(t, 30, rpc.GenOptions{Txs: 2, LogsPerTx: 1})
	down.setFault(func(string, uint64, int) *reply { return &reply{status: http.StatusBadGateway} })
	lagging.setFault(func(method string, height uint64, _ int) *reply {
		if method == "eth_getBlockByNumber" && height == 5 {
			return &reply{result: json.RawMessage(`{"number":"0x5"}`)} // malformed here only
		}
		return nil
	})
	client := func(name, url string) rpc.NamedClient {
		cfg := batchConfig(url)
		cfg.EndpointName = name
		cfg.MaxAttempts = 2
		return rpc.NamedClient{Name: name, Client: newClient(t, cfg, nil)}
	}
	m, err := rpc.NewMulti("1", []rpc.NamedClient{client("down", down.srv.URL), client("lagging", lagging.srv.URL),
		client("full", full.srv.URL)}, rpc.MultiOptions{}, zaptest.NewLogger(t), nil)
	require.NoError(t, err)

	heights := heightsRange(1, 32)
	results := rpc.FetchBlocks(t.Context(), m, heights)
	for _, r := range results {
		if r.Height > 30 {
			var all *rpc.AllFailedError
			require.ErrorAs(t, r.Err, &all, "height %d", r.Height)
			assert.Len(t, all.Errs, 3)
			assert.True(t, rpc.IsTransient(r.Err), "unwraps to the first endpoint's error")
			continue
		}
		require.NoError(t, r.Err, "height %d", r.Height)
		assert.Equal(t, r.Height, r.Data.Block.Number)
	}
	assert.Equal(t, []string{"lagging", "full"}, m.Healthy(), "down cools down")
	assert.Positive(t, full.count("eth_getBlockByNumber"))
	assert.Equal(t, 13, full.count("eth_getBlockByNumber"), "full is asked only for what lagging lacks: 5 and 21..32")
}

func TestFetchBlocksOnAnvil(t *testing.T) {
	node, err := localstack.StartAnvil(t.TempDir(), localstack.AnvilOptions{})
	require.NoError(t, err)
	t.Cleanup(node.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	g, err := loadgen.New(ctx, node.HTTPURL, zaptest.NewLogger(t), loadgen.Config{PrivateKey: localstack.AnvilDefaultKey})
	require.NoError(t, err)
	defer g.Close()
	raw, err := gethrpc.DialContext(ctx, node.HTTPURL)
	require.NoError(t, err)
	defer raw.Close()
	_, err = g.Run(ctx, 4)
	require.NoError(t, err)
	require.NoError(t, raw.CallContext(ctx, nil, "evm_setAutomine", false))
	batch, err := g.SendBatch(ctx, 6)
	require.NoError(t, err)
	require.NoError(t, raw.CallContext(ctx, nil, "evm_mine"))
	require.NoError(t, raw.CallContext(ctx, nil, "evm_setAutomine", true))
	_, err = g.WaitReceipts(ctx, batch)
	require.NoError(t, err)
	require.NoError(t, g.MineEmpty(ctx, 5))

	c := newNodeClient(t, ctx, "anvil", node.HTTPURL, nil)
	head, err := c.HeadHeight(ctx)
	require.NoError(t, err)
	heights := heightsRange(0, head+3)
	results := c.FetchBlocks(ctx, heights)
	txs := 0
	for _, r := range results[:head+1] {
		require.NoError(t, r.Err, "height %d", r.Height)
		txs += len(r.Data.Transactions)
	}
	assert.GreaterOrEqual(t, txs, 10)
	for _, r := range results[head+1:] {
		assert.ErrorIs(t, r.Err, rpc.ErrBlockNotFound, "height %d above the head", r.Height)
	}
	requireSameAsSingle(t, c, results, heights)

	// Without eth_getBlockReceipts, the same blocks.
	proxy := newNodeClient(t, ctx, "anvil-proxy", hideBlockReceipts(t, node.HTTPURL), nil)
	requireSameAsSingle(t, c, proxy.FetchBlocks(ctx, heights), heights)
}

func TestFetchBlocksCountsEveryCallAgainstTheRateLimit(t *testing.T) {
	node := newChainNode(t, 10, rpc.GenOptions{Txs: 1, LogsPerTx: 1})
	cfg := batchConfig(node.srv.URL)
	cfg.RateLimit = 200 // one call per 5 ms
	cfg.Burst = 10
	c := newClient(t, cfg, nil)
	start := time.Now()
	for _, r := range c.FetchBlocks(t.Context(), heightsRange(1, 10)) {
		require.NoError(t, r.Err)
	}
	// One request of 20 calls: the burst covers 10, the other 10 wait 5 ms
	// each. Counted per request, it would not have waited at all.
	assert.GreaterOrEqual(t, time.Since(start), 45*time.Millisecond)
	assert.Equal(t, 1, node.postCount())
}

// oddBatchNode answers every request with body.
func oddBatchNode(t *testing.T, body string) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestFetchBlocksOddBatchAnswers(t *testing.T) {
	block, _ := rpc.GenBlock(1, 1, rpc.GenOptions{Txs: 1, LogsPerTx: 1})

	// The receipts call (id 1) has no answer: that call's height is
	// malformed, as go-ethereum's client reports it.
	c := newClient(t, batchConfig(oddBatchNode(t, `[{"jsonrpc":"2.0","id":0,"result":`+string(block)+`}]`)), nil)
	r := c.FetchBlocks(t.Context(), []uint64{1})[0]
	var mal *rpc.MalformedError
	require.ErrorAs(t, r.Err, &mal)
	assert.Equal(t, "eth_getBlockReceipts", mal.Method)
	assert.Equal(t, "batch", mal.Field)

	// One error for the whole batch: every height gets it.
	c = newClient(t, batchConfig(oddBatchNode(t, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"batch too large"}}`)), nil)
	for _, r := range c.FetchBlocks(t.Context(), []uint64{1, 2}) {
		var req *rpc.RequestError
		require.ErrorAs(t, r.Err, &req)
		assert.Equal(t, -32600, req.Code)
	}

	// Not JSON at all.
	c = newClient(t, batchConfig(oddBatchNode(t, `<html>bad gateway</html>`)), nil)
	r = c.FetchBlocks(t.Context(), []uint64{1})[0]
	require.ErrorAs(t, r.Err, &mal)
	assert.Equal(t, "response", mal.Field)

	// A JSON answer that is not a batch answer.
	c = newClient(t, batchConfig(oddBatchNode(t, `{"hello":"world"}`)), nil)
	r = c.FetchBlocks(t.Context(), []uint64{1})[0]
	require.ErrorAs(t, r.Err, &mal)
	assert.Equal(t, "response", mal.Field)
}
