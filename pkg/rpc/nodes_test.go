package rpc_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	gethrpc "github.com/ethereum/go-ethereum/rpc"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"github.com/tideline-dev/tideline/internal/testkit"
	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/loadgen"
	"github.com/tideline-dev/tideline/pkg/localstack"
	"github.com/tideline-dev/tideline/pkg/rpc"
)

// These tests run the adapter against real nodes: anvil (Rust, Reth's
// RPC) and geth --dev (Go), two independent implementations of the API.

func TestFetchBlockOnAnvil(t *testing.T) {
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

	// Automine: one transaction per block.
	sent, err := g.Run(ctx, 6)
	require.NoError(t, err)
	// Several transactions in one block: hold mining, send, mine once.
	require.NoError(t, raw.CallContext(ctx, nil, "evm_setAutomine", false))
	batch, err := g.SendBatch(ctx, 5)
	require.NoError(t, err)
	require.NoError(t, raw.CallContext(ctx, nil, "evm_mine"))
	require.NoError(t, raw.CallContext(ctx, nil, "evm_setAutomine", true))
	_, err = g.WaitReceipts(ctx, batch)
	require.NoError(t, err)
	sent = append(sent, batch...)
	require.NoError(t, g.MineEmpty(ctx, 20))

	reg := prometheus.NewRegistry()
	c := newNodeClient(t, ctx, "anvil", node.HTTPURL, reg)
	stats := checkChain(t, ctx, c, raw, sent)
	assert.GreaterOrEqual(t, stats.maxTxs, 5, "one block holds the batch")
	assert.Equal(t, 0.0, testkit.Sum(t, reg, "rpc_errors_total", nil))
	assert.Zero(t, testkit.Sum(t, reg, "rpc_requests_total", map[string]string{"method": "eth_getTransactionReceipt"}),
		"anvil has eth_getBlockReceipts")

	// Through a proxy that hides eth_getBlockReceipts, the batched
	// per-transaction fallback gives the same blocks; heights are fetched
	// concurrently, as workers do.
	proxy := hideBlockReceipts(t, node.HTTPURL)
	proxyReg := prometheus.NewRegistry()
	fallback := newNodeClient(t, ctx, "anvil-proxy", proxy, proxyReg)
	var wg sync.WaitGroup
	got := make([]*chaindata.BlockData, stats.head+1)
	errs := make([]error, stats.head+1)
	for h := range got {
		wg.Go(func() { got[h], errs[h] = rpc.FetchBlock(ctx, fallback, uint64(h)) })
	}
	wg.Wait()
	for h := range got {
		require.NoError(t, errs[h], "height %d via the fallback", h)
		want, err := rpc.FetchBlock(ctx, c, uint64(h))
		require.NoError(t, err)
		require.Equal(t, want, got[h], "height %d via the fallback", h)
	}
	assert.Positive(t, testkit.Sum(t, proxyReg, "rpc_requests_total", map[string]string{"method": "eth_getTransactionReceipt"}))
	// Workers that started before the first refusal may each have tried.
	assert.LessOrEqual(t, testkit.Sum(t, proxyReg, "rpc_requests_total", map[string]string{"method": "eth_getBlockReceipts"}),
		float64(stats.blocksWithTxs))

	// The websocket transport gives the same blocks.
	ws := newNodeClient(t, ctx, "anvil-ws", node.WSURL, nil)
	for _, h := range []uint64{stats.head, stats.head - 20} {
		viaHTTP, err := rpc.FetchBlock(ctx, c, h)
		require.NoError(t, err)
		viaWS, err := rpc.FetchBlock(ctx, ws, h)
		require.NoError(t, err)
		assert.Equal(t, viaHTTP, viaWS)
	}
}

func TestFetchBlockOnGethDev(t *testing.T) {
	node, err := localstack.StartGethDev(t.TempDir(), localstack.GethOptions{Period: time.Second})
	require.NoError(t, err)
	t.Cleanup(node.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// No key: the unlocked dev account signs (eth_sendTransaction).
	g, err := loadgen.New(ctx, node.HTTPURL, zaptest.NewLogger(t), loadgen.Config{})
	require.NoError(t, err)
	defer g.Close()
	raw, err := gethrpc.DialContext(ctx, node.HTTPURL)
	require.NoError(t, err)
	defer raw.Close()

	sent, err := g.SendBatch(ctx, 8)
	require.NoError(t, err)
	_, err = g.WaitReceipts(ctx, sent)
	require.NoError(t, err)
	more, err := g.Run(ctx, 4)
	require.NoError(t, err)
	sent = append(sent, more...)

	reg := prometheus.NewRegistry()
	c := newNodeClient(t, ctx, "geth", node.HTTPURL, reg)
	stats := checkChain(t, ctx, c, raw, sent)
	assert.GreaterOrEqual(t, stats.maxTxs, 2, "a block period gathers several transactions")
	assert.Equal(t, 0.0, testkit.Sum(t, reg, "rpc_errors_total", nil))

	ws := newNodeClient(t, ctx, "geth-ws", node.WSURL, nil)
	viaHTTP, err := rpc.FetchBlock(ctx, c, stats.head)
	require.NoError(t, err)
	viaWS, err := rpc.FetchBlock(ctx, ws, stats.head)
	require.NoError(t, err)
	assert.Equal(t, viaHTTP, viaWS)
}

func newNodeClient(t *testing.T, ctx context.Context, name, url string, reg prometheus.Registerer) *rpc.Ethereum {
	t.Helper()
	var m *rpc.Metrics
	if reg != nil {
		m = rpc.NewMetrics(reg)
	}
	c, err := rpc.NewEthereum(ctx, rpc.EthereumConfig{
		ChainID: "local", EndpointName: name, URL: url, Timeout: 10 * time.Second,
	}, zaptest.NewLogger(t), m)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

type chainStats struct {
	head           uint64
	maxTxs         int
	blocksWithLogs int
	blocksWithTxs  int
	txs, logs      int
}

// checkChain fetches every height up to the head and compares it with what
// the node reports through plain calls.
func checkChain(t *testing.T, ctx context.Context, c *rpc.Ethereum, raw *gethrpc.Client, sent []common.Hash) chainStats {
	t.Helper()
	head, err := c.HeadHeight(ctx)
	require.NoError(t, err)
	require.Less(t, head, uint64(500), "test chains stay small")
	found := map[string]chaindata.Transaction{}
	var st chainStats
	st.head = head
	var prev *chaindata.BlockData
	for h := uint64(0); h <= head; h++ {
		data, err := rpc.FetchBlock(ctx, c, h)
		require.NoError(t, err, "height %d", h)
		b := data.Block
		require.Equal(t, h, b.Number)
		if prev != nil {
			require.Equal(t, prev.Block.Hash, b.ParentHash, "height %d links to its parent", h)
			require.GreaterOrEqual(t, b.Timestamp, prev.Block.Timestamp)
		}

		var nodeBlock struct {
			Hash         string   `json:"hash"`
			Transactions []string `json:"transactions"`
		}
		hexH := fmt.Sprintf("0x%x", h)
		require.NoError(t, raw.CallContext(ctx, &nodeBlock, "eth_getBlockByNumber", hexH, false))
		require.Equal(t, nodeBlock.Hash, b.Hash)
		require.Equal(t, len(nodeBlock.Transactions), int(b.TxCount), "height %d", h)
		require.Len(t, data.Transactions, len(nodeBlock.Transactions))

		var nodeReceipts []struct {
			Logs []json.RawMessage `json:"logs"`
		}
		require.NoError(t, raw.CallContext(ctx, &nodeReceipts, "eth_getBlockReceipts", hexH))
		nodeLogs := 0
		for _, r := range nodeReceipts {
			nodeLogs += len(r.Logs)
		}
		require.Len(t, nodeReceipts, len(data.Transactions))
		require.Equal(t, nodeLogs, int(b.LogCount), "height %d", h)
		require.Len(t, data.Logs, nodeLogs)

		var perTx uint32
		for i, tx := range data.Transactions {
			require.Equal(t, nodeBlock.Transactions[i], tx.Hash)
			require.Equal(t, uint32(i), tx.Index)
			require.Equal(t, len(nodeReceipts[i].Logs), int(tx.LogCount))
			require.NotEmpty(t, tx.Raw)
			require.NotEmpty(t, tx.ReceiptRaw)
			require.NotZero(t, tx.GasUsed)
			perTx += tx.LogCount
			found[tx.Hash] = tx
		}
		require.Equal(t, b.LogCount, perTx)
		for i, l := range data.Logs {
			require.Equal(t, b.Hash, l.BlockHash)
			if i > 0 {
				require.Greater(t, l.LogIndex, data.Logs[i-1].LogIndex)
			}
		}
		if b.LogCount > 0 {
			st.blocksWithLogs++
		}
		if b.TxCount > 0 {
			st.blocksWithTxs++
		}
		st.maxTxs = max(st.maxTxs, len(data.Transactions))
		st.txs += len(data.Transactions)
		st.logs += len(data.Logs)
		prev = data
	}
	for _, h := range sent {
		tx, ok := found[h.Hex()]
		require.True(t, ok, "sent transaction %s indexed", h.Hex())
		require.Equal(t, uint8(1), tx.Status, "transaction %s", h.Hex())
	}
	require.Positive(t, st.blocksWithLogs, "some block has logs")
	var types_ = map[uint64]bool{}
	for _, tx := range found {
		types_[tx.Type] = true
	}
	require.True(t, types_[0] && types_[2], "legacy and fee-market transactions both seen: %v", types_)
	t.Logf("heights 0..%d: %d transactions, %d logs, %d blocks with logs, at most %d transactions in a block",
		head, st.txs, st.logs, st.blocksWithLogs, st.maxTxs)
	return st
}

// hideBlockReceipts proxies JSON-RPC to target but answers -32601 for
// eth_getBlockReceipts, as nodes without the method do.
func hideBlockReceipts(t *testing.T, target string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var one struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(body, &one) == nil && one.Method == "eth_getBlockReceipts" {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"Method not found"}}`, one.ID)
			return
		}
		req, err := http.NewRequestWithContext(r.Context(), http.MethodPost, target, bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}
