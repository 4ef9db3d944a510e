package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/ethereum/go-ethereum/common/hexutil"
	gethrpc "github.com/ethereum/go-ethereum/rpc"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/tideline-dev/tideline/internal/testkit"
	"github.com/tideline-dev/tideline/pkg/api"
	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/indexer/worker"
	"github.com/tideline-dev/tideline/pkg/loadgen"
	"github.com/tideline-dev/tideline/pkg/localstack"
	"github.com/tideline-dev/tideline/pkg/rpc"
	"github.com/tideline-dev/tideline/pkg/storage"
)

// apiHarness talks to a running query API and to the node it indexed.
// Every answer of the API goes through the OpenAPI contract check.
type apiHarness struct {
	t        *testing.T
	base     string
	chainID  string
	client   *http.Client
	contract *testkit.APIContract
	node     *gethrpc.Client
	nodeURL  string
	store    *storage.ClickHouse
	conn     driver.Conn
}

// startAPI serves the API for cfg's chains on a loopback port until the
// test ends, through the production server (Listen, Serve).
func startAPI(t *testing.T, cfg *config.Config, store *storage.ClickHouse, apiCfg config.API) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	log := zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))
	reg := prometheus.NewRegistry()
	m := rpc.NewMetrics(reg)
	clients := map[string]rpc.Client{}
	var secrets []string
	for id, ch := range cfg.Chains {
		c, err := worker.NewChainClient(ctx, id, ch, log, m)
		require.NoError(t, err)
		t.Cleanup(c.Close)
		clients[id] = c
		for _, u := range ch.Endpoints {
			secrets = append(secrets, u)
		}
	}
	apiCfg.Listen = "127.0.0.1:0"
	srv, err := api.New(api.Options{
		Config: apiCfg, Chains: cfg.Chains, Store: api.NewStore(store.Reader()),
		Head: func(ctx context.Context, id string) (uint64, error) { return clients[id].HeadHeight(ctx) },
		Forward: func(ctx context.Context, id, method string, params []json.RawMessage) (json.RawMessage, error) {
			return clients[id].(rpc.Forwarder).Forward(ctx, method, params)
		},
		Temporal: temporalClient(t), Registry: reg, Logger: log, Secrets: secrets,
	})
	require.NoError(t, err)
	l, err := srv.Listen()
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return "http://" + l.Addr().String()
}

// get requests a path of the API, checks the answer against the OpenAPI
// document and returns its status and body.
func (h *apiHarness) get(path string) (int, []byte) {
	h.t.Helper()
	req, err := http.NewRequest(http.MethodGet, h.base+path, nil)
	require.NoError(h.t, err)
	return h.contract.Do(h.t, h.client, req)
}

// getJSON expects a status and decodes the body into v.
func (h *apiHarness) getJSON(path string, status int, v any) {
	h.t.Helper()
	code, body := h.get(path)
	require.Equal(h.t, status, code, "%s: %s", path, body)
	if v != nil {
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber()
		require.NoError(h.t, dec.Decode(v), "%s", body)
	}
}

// es requests the Etherscan route with the parameters.
func (h *apiHarness) es(status int, v any, kv ...string) {
	h.t.Helper()
	q := url.Values{}
	for i := 0; i < len(kv); i += 2 {
		q.Set(kv[i], kv[i+1])
	}
	h.getJSON("/v1/chains/"+h.chainID+"/etherscan/api?"+q.Encode(), status, v)
}

// call asks the node.
func (h *apiHarness) call(method string, args ...any) json.RawMessage {
	h.t.Helper()
	var out json.RawMessage
	require.NoError(h.t, h.node.CallContext(context.Background(), &out, method, args...))
	return out
}

// normalized decodes JSON with hex strings in lower case, so that a
// node's checksummed or upper-case hex compares equal to the stored form.
func normalized(t *testing.T, raw []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	require.NoError(t, dec.Decode(&v), "%s", raw)
	var walk func(any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case string:
			if strings.HasPrefix(x, "0x") || strings.HasPrefix(x, "0X") {
				return strings.ToLower(x)
			}
		case []any:
			for i := range x {
				x[i] = walk(x[i])
			}
		case map[string]any:
			for k := range x {
				x[k] = walk(x[k])
			}
		}
		return v
	}
	return walk(v)
}

func hexNum(t *testing.T, v any) uint64 {
	t.Helper()
	s, ok := v.(string)
	require.True(t, ok, "%v is not a hex string", v)
	n, err := hexutil.DecodeUint64(s)
	require.NoError(t, err)
	return n
}

func hexBig(t *testing.T, v any) string {
	t.Helper()
	s, ok := v.(string)
	require.True(t, ok, "%v is not a hex string", v)
	n, err := hexutil.DecodeBig(s)
	require.NoError(t, err)
	return n.String()
}

func jsonNum(t *testing.T, v any) uint64 {
	t.Helper()
	n, ok := v.(json.Number)
	require.True(t, ok, "%v is not a number", v)
	u, err := n.Int64()
	require.NoError(t, err)
	return uint64(u)
}

// nodeChain is what the node says of heights 0..head: blocks with full
// transactions, receipts by transaction hash, logs.
type nodeChain struct {
	blocks   []map[string]any
	raw      []json.RawMessage // eth_getBlockByNumber(h, true) as sent
	receipts map[string]map[string]any
	logs     []map[string]any
}

func (h *apiHarness) readNode(head uint64) *nodeChain {
	h.t.Helper()
	nc := &nodeChain{receipts: map[string]map[string]any{}}
	for n := uint64(0); n <= head; n++ {
		raw := h.call("eth_getBlockByNumber", hexutil.Uint64(n), true)
		nc.raw = append(nc.raw, raw)
		b := normalized(h.t, raw).(map[string]any)
		nc.blocks = append(nc.blocks, b)
		for _, tx := range b["transactions"].([]any) {
			hash := tx.(map[string]any)["hash"].(string)
			nc.receipts[hash] = normalized(h.t, h.call("eth_getTransactionReceipt", hash)).(map[string]any)
		}
	}
	all := normalized(h.t, h.call("eth_getLogs", map[string]any{"fromBlock": "0x0", "toBlock": hexutil.Uint64(head)}))
	for _, l := range all.([]any) {
		nc.logs = append(nc.logs, l.(map[string]any))
	}
	return nc
}

// The query API on a real stack: anvil with the load generator's traffic,
// indexed by the worker; every route checked against the node's own
// answers for the same block, transaction, receipt and log.
func TestQueryAPI(t *testing.T) {
	const chainID = "it-api"
	node, err := localstack.StartAnvil(filepath.Join(stack.dir, chainID), localstack.AnvilOptions{})
	require.NoError(t, err)
	t.Cleanup(node.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	gen, err := loadgen.New(ctx, node.HTTPURL, zap.NewNop(), loadgen.Config{PrivateKey: localstack.AnvilDefaultKey})
	require.NoError(t, err)
	defer gen.Close()
	contractAddr, err := gen.Deploy(ctx)
	require.NoError(t, err)
	hashes, err := gen.Run(ctx, 40)
	require.NoError(t, err)
	_, err = gen.WaitReceipts(ctx, hashes)
	require.NoError(t, err)

	store := openStore(t)
	cfg := chainConfig(chainID, node.HTTPURL)
	runWorker(t, cfg)
	head := nodeHead(t, node.HTTPURL)
	waitIndexed(t, store, chainID, head, 2*time.Minute)
	conn := rawConn(t)

	h := &apiHarness{
		t: t, chainID: chainID, client: &http.Client{Timeout: 30 * time.Second}, contract: testkit.NewAPIContract(t),
		node: nodeClient(t, node.HTTPURL), nodeURL: node.HTTPURL, store: store, conn: conn,
	}
	h.base = startAPI(t, withNodeChainID(t, cfg, node.HTTPURL), store, config.API{})
	nc := h.readNode(head)
	sender := strings.ToLower(gen.From().Hex())
	contract := strings.ToLower(contractAddr.Hex())

	t.Run("blocks", func(t *testing.T) { h.t = t; checkBlocks(h, nc, head) })
	t.Run("transactions", func(t *testing.T) { h.t = t; checkTransactions(h, nc) })
	t.Run("logs", func(t *testing.T) { h.t = t; checkLogs(h, nc, head, contract) })
	t.Run("address", func(t *testing.T) { h.t = t; checkAddress(h, nc, head, sender) })
	t.Run("time", func(t *testing.T) { h.t = t; checkTimes(h, nc, head) })
	t.Run("status", func(t *testing.T) { h.t = t; checkStatus(h, head) })
	t.Run("stats", func(t *testing.T) { h.t = t; checkStats(h, head) })
	t.Run("malformed", func(t *testing.T) { h.t = t; checkMalformed(h, nc, head) })
	t.Run("binary", func(t *testing.T) { h.t = t; checkBinary(h, nc) })
	t.Run("jsonrpc", func(t *testing.T) {
		require.Equal(t, len(nc.logs), checkJSONRPC(t, node.HTTPURL, h.base, chainID, head))
	})
	t.Run("pruning", func(t *testing.T) { h.t = t; checkPruning(h, nc, head, sender) })
}

func checkBlocks(h *apiHarness, nc *nodeChain, head uint64) {
	t := h.t
	for n := uint64(0); n <= head; n++ {
		want := nc.blocks[n]
		tag := hexutil.Uint64(n).String()
		// The proxy module answers what the node answers, full objects and hashes.
		var full struct{ Result json.RawMessage }
		h.es(200, &full, "module", "proxy", "action", "eth_getBlockByNumber", "tag", tag, "boolean", "true")
		require.Equal(t, want, normalized(t, full.Result), "eth_getBlockByNumber(%d, true)", n)
		var short struct{ Result json.RawMessage }
		h.es(200, &short, "module", "proxy", "action", "eth_getBlockByNumber", "tag", tag)
		require.Equal(t, normalized(t, h.call("eth_getBlockByNumber", hexutil.Uint64(n), false)), normalized(t, short.Result))

		// The REST block: every column equal to the node's field, and
		// columns plus raw are the node's whole object.
		var b map[string]any
		h.getJSON(fmt.Sprintf("/v1/chains/%s/blocks/%d", h.chainID, n), 200, &b)
		require.Equal(t, n, jsonNum(t, b["number"]))
		require.Equal(t, want["hash"], b["hash"])
		require.Equal(t, want["parentHash"], b["parent_hash"])
		require.Equal(t, hexNum(t, want["timestamp"]), jsonNum(t, b["timestamp"]))
		require.Equal(t, want["miner"], b["miner"])
		require.Equal(t, hexNum(t, want["gasUsed"]), jsonNum(t, b["gas_used"]))
		require.Equal(t, hexNum(t, want["gasLimit"]), jsonNum(t, b["gas_limit"]))
		require.Equal(t, hexBig(t, want["baseFeePerGas"]), b["base_fee_per_gas"])
		require.Equal(t, hexNum(t, want["size"]), jsonNum(t, b["size"]))
		txs := want["transactions"].([]any)
		require.Equal(t, uint64(len(txs)), jsonNum(t, b["tx_count"]))
		logs := 0
		for _, tx := range txs {
			logs += len(nc.receipts[tx.(map[string]any)["hash"].(string)]["logs"].([]any))
		}
		require.Equal(t, uint64(logs), jsonNum(t, b["log_count"]))
		columns := map[string]bool{"number": true, "hash": true, "parentHash": true, "timestamp": true, "miner": true,
			"gasUsed": true, "gasLimit": true, "baseFeePerGas": true, "size": true, "transactions": true}
		for k, v := range b["raw"].(map[string]any) {
			require.Equal(t, want[k], v, "raw %s of block %d", k, n)
			columns[k] = true
		}
		for k := range want {
			require.True(t, columns[k], "block %d: the node's %s is neither a column nor in raw", n, k)
		}
		var byHash map[string]any
		h.getJSON(fmt.Sprintf("/v1/chains/%s/blocks/hash/%s", h.chainID, want["hash"]), 200, &byHash)
		require.Equal(t, b, byHash)

		// The block's transactions, a page of two at a time.
		var got []any
		path := fmt.Sprintf("/v1/chains/%s/blocks/%d/txs?limit=2", h.chainID, n)
		for p := path; ; {
			var pg struct {
				Items      []map[string]any
				NextCursor *string `json:"next_cursor"`
			}
			h.getJSON(p, 200, &pg)
			for _, tx := range pg.Items {
				got = append(got, tx["hash"])
			}
			if pg.NextCursor == nil {
				break
			}
			p = path + "&cursor=" + *pg.NextCursor
		}
		var wantHashes []any
		for _, tx := range txs {
			wantHashes = append(wantHashes, tx.(map[string]any)["hash"])
		}
		require.Equal(t, wantHashes, got, "transactions of block %d", n)
	}
	var bn struct{ Result string }
	h.es(200, &bn, "module", "proxy", "action", "eth_blockNumber")
	require.Equal(t, hexutil.Uint64(head).String(), bn.Result, "eth_blockNumber is the watermark, here the head")
	// A range of heights, paginated: the node's hashes in order.
	var hs []any
	path := fmt.Sprintf("/v1/chains/%s/blocks?from=0&to=%d&limit=7", h.chainID, head)
	for p := path; ; {
		var pg struct {
			Items      []map[string]any
			NextCursor *string `json:"next_cursor"`
		}
		h.getJSON(p, 200, &pg)
		for _, b := range pg.Items {
			hs = append(hs, b["hash"])
		}
		if pg.NextCursor == nil {
			break
		}
		p = path + "&cursor=" + *pg.NextCursor
	}
	require.Len(t, hs, int(head+1))
	for n, hash := range hs {
		require.Equal(t, nc.blocks[n]["hash"], hash)
	}
	// Above the watermark: not indexed, and null from the proxy as from a node.
	h.getJSON(fmt.Sprintf("/v1/chains/%s/blocks/%d", h.chainID, head+1), 404, nil)
	var none struct{ Result json.RawMessage }
	h.es(200, &none, "module", "proxy", "action", "eth_getBlockByNumber", "tag", hexutil.Uint64(head+1).String())
	require.Equal(t, "null", string(none.Result))
}

func checkTransactions(h *apiHarness, nc *nodeChain) {
	t := h.t
	seen := 0
	for _, b := range nc.blocks {
		for _, raw := range b["transactions"].([]any) {
			want := raw.(map[string]any)
			hash := want["hash"].(string)
			receipt := nc.receipts[hash]
			var tx, rc struct{ Result json.RawMessage }
			h.es(200, &tx, "module", "proxy", "action", "eth_getTransactionByHash", "txhash", hash)
			require.Equal(t, normalized(t, h.call("eth_getTransactionByHash", hash)), normalized(t, tx.Result))
			h.es(200, &rc, "module", "proxy", "action", "eth_getTransactionReceipt", "txhash", strings.ToUpper(hash[:1])+hash[1:])
			require.Equal(t, receipt, normalized(t, rc.Result), "receipt of %s (logsBloom rebuilt from the logs)", hash)

			var got map[string]any
			h.getJSON(fmt.Sprintf("/v1/chains/%s/txs/%s", h.chainID, hash), 200, &got)
			require.Equal(t, hash, got["hash"])
			require.Equal(t, hexNum(t, want["blockNumber"]), jsonNum(t, got["block_number"]))
			require.Equal(t, want["blockHash"], got["block_hash"])
			require.Equal(t, hexNum(t, want["transactionIndex"]), jsonNum(t, got["tx_index"]))
			require.Equal(t, hexNum(t, want["type"]), jsonNum(t, got["type"]))
			require.Equal(t, want["from"], got["from"])
			require.Equal(t, want["to"], got["to"]) // nil for a creation
			require.Equal(t, hexBig(t, want["value"]), got["value"])
			require.Equal(t, hexNum(t, want["nonce"]), jsonNum(t, got["nonce"]))
			require.Equal(t, hexNum(t, want["gas"]), jsonNum(t, got["gas"]))
			require.Equal(t, hexBig(t, want["gasPrice"]), got["gas_price"])
			require.Equal(t, hexNum(t, receipt["status"]), jsonNum(t, got["status"]))
			require.Equal(t, hexNum(t, receipt["gasUsed"]), jsonNum(t, got["gas_used"]))
			require.Equal(t, hexBig(t, receipt["effectiveGasPrice"]), got["effective_gas_price"])
			require.Equal(t, receipt["contractAddress"], got["contract_address"])
			require.Equal(t, uint64(len(receipt["logs"].([]any))), jsonNum(t, got["log_count"]))
			require.Equal(t, want["input"], got["raw"].(map[string]any)["input"])
			require.Equal(t, receipt["cumulativeGasUsed"], got["receipt_raw"].(map[string]any)["cumulativeGasUsed"])
			seen++
		}
	}
	require.Greater(t, seen, 40)
	var none struct{ Result json.RawMessage }
	missing := "0x" + strings.Repeat("ab", 32)
	h.es(200, &none, "module", "proxy", "action", "eth_getTransactionByHash", "txhash", missing)
	require.Equal(t, "null", string(none.Result))
	h.es(200, &none, "module", "proxy", "action", "eth_getTransactionReceipt", "txhash", missing)
	require.Equal(t, "null", string(none.Result))
	h.getJSON(fmt.Sprintf("/v1/chains/%s/txs/%s", h.chainID, missing), 404, nil)
}

// restLogs reads every page of a logs listing.
func (h *apiHarness) restLogs(path string) []map[string]any {
	var out []map[string]any
	for p := path + "&limit=7"; ; {
		var pg struct {
			Items      []map[string]any
			NextCursor *string `json:"next_cursor"`
		}
		h.getJSON(p, 200, &pg)
		out = append(out, pg.Items...)
		if pg.NextCursor == nil {
			return out
		}
		p = path + "&limit=7&cursor=" + *pg.NextCursor
	}
}

func requireSameLogs(t *testing.T, want []map[string]any, got []map[string]any) {
	t.Helper()
	require.Len(t, got, len(want))
	for i, w := range want {
		g := got[i]
		require.Equal(t, hexNum(t, w["blockNumber"]), jsonNum(t, g["block_number"]))
		require.Equal(t, w["blockHash"], g["block_hash"])
		require.Equal(t, w["transactionHash"], g["tx_hash"])
		require.Equal(t, hexNum(t, w["transactionIndex"]), jsonNum(t, g["tx_index"]))
		require.Equal(t, hexNum(t, w["logIndex"]), jsonNum(t, g["log_index"]))
		require.Equal(t, w["address"], g["address"])
		require.Equal(t, w["topics"], g["topics"])
		require.Equal(t, w["data"], g["data"])
	}
}

func esHex(n uint64) string {
	if n == 0 {
		return "0x"
	}
	return fmt.Sprintf("0x%x", n)
}

func checkLogs(h *apiHarness, nc *nodeChain, head uint64, contract string) {
	t := h.t
	require.NotEmpty(t, nc.logs)
	requireSameLogs(t, nc.logs, h.restLogs(fmt.Sprintf("/v1/chains/%s/logs?from=0&to=%d", h.chainID, head)))

	// By address and topic0, against the node's own filter.
	topic0 := nc.logs[0]["topics"].([]any)[0].(string)
	filtered := normalized(t, h.call("eth_getLogs", map[string]any{
		"fromBlock": "0x0", "toBlock": hexutil.Uint64(head), "address": contract, "topics": []any{topic0},
	}))
	var want []map[string]any
	for _, l := range filtered.([]any) {
		want = append(want, l.(map[string]any))
	}
	require.NotEmpty(t, want)
	requireSameLogs(t, want, h.restLogs(fmt.Sprintf("/v1/chains/%s/logs?from=0&to=%d&address=%s&topic0=%s", h.chainID, head, contract, topic0)))

	// Etherscan getLogs: the same logs, with Etherscan's hex formats and
	// the block time and the transaction's gas.
	var env struct {
		Status, Message string
		Result          []map[string]any
	}
	h.es(200, &env, "module", "logs", "action", "getLogs", "fromBlock", "0", "toBlock", "latest", "address", contract, "topic0", topic0)
	require.Equal(t, "1", env.Status)
	require.Len(t, env.Result, len(want))
	for i, w := range want {
		g := env.Result[i]
		bn := hexNum(t, w["blockNumber"])
		receipt := nc.receipts[w["transactionHash"].(string)]
		require.Equal(t, map[string]any{
			"address": w["address"], "topics": w["topics"], "data": w["data"],
			"blockNumber": esHex(bn), "blockHash": w["blockHash"],
			"timeStamp":       esHex(hexNum(t, nc.blocks[bn]["timestamp"])),
			"gasPrice":        esHex(hexNum(t, receipt["effectiveGasPrice"])),
			"gasUsed":         esHex(hexNum(t, receipt["gasUsed"])),
			"logIndex":        esHex(hexNum(t, w["logIndex"])),
			"transactionHash": w["transactionHash"], "transactionIndex": esHex(hexNum(t, w["transactionIndex"])),
		}, g)
	}
	// Etherscan's topic operators, against the node's logs filtered here:
	// Tick (no topic1) OR topic1 = the caller, then the same with AND
	// (which no log passes), a page at a time.
	tick := strings.ToLower(loadgen.TickTopic.Hex())
	var caller string
	for _, l := range nc.logs {
		if ts := l["topics"].([]any); len(ts) > 1 {
			caller = ts[1].(string)
		}
	}
	require.NotEmpty(t, caller, "the Ping logs carry the caller as topic1")
	var either []map[string]any
	for _, l := range nc.logs {
		ts := l["topics"].([]any)
		if ts[0] == tick || (len(ts) > 1 && ts[1] == caller) {
			either = append(either, l)
		}
	}
	require.Greater(t, len(either), 6)
	h.es(200, &env, "module", "logs", "action", "getLogs", "fromBlock", "0", "toBlock", fmt.Sprint(head),
		"topic0", tick, "topic1", caller, "topic0_1_opr", "or", "page", "2", "offset", "3")
	require.Len(t, env.Result, 3)
	for i, g := range env.Result {
		require.Equal(t, either[3+i]["transactionHash"], g["transactionHash"])
		require.Equal(t, esHex(hexNum(t, either[3+i]["logIndex"])), g["logIndex"])
	}
	h.es(200, &env, "module", "logs", "action", "getLogs", "fromBlock", "0", "toBlock", fmt.Sprint(head),
		"topic0", tick, "topic1", caller, "topic0_1_opr", "and")
	require.Equal(t, "No records found", env.Message)
	h.es(200, &env, "module", "logs", "action", "getLogs", "fromBlock", "0", "toBlock", fmt.Sprint(head),
		"address", "0x"+strings.Repeat("0", 39)+"1")
	require.Equal(t, "0", env.Status)
	require.Equal(t, "No records found", env.Message)
	require.Empty(t, env.Result)
}

// nodeAddressTxs lists, oldest first, the node's transactions that an
// address sent, received or created a contract with.
func nodeAddressTxs(nc *nodeChain, addr string) []map[string]any {
	var out []map[string]any
	for _, b := range nc.blocks {
		for _, raw := range b["transactions"].([]any) {
			tx := raw.(map[string]any)
			r := nc.receipts[tx["hash"].(string)]
			if tx["from"] == addr || tx["to"] == addr || r["contractAddress"] == addr {
				out = append(out, tx)
			}
		}
	}
	return out
}

func checkAddress(h *apiHarness, nc *nodeChain, head uint64, sender string) {
	t := h.t
	want := nodeAddressTxs(nc, sender)
	require.Greater(t, len(want), 40)
	var got []any
	path := fmt.Sprintf("/v1/chains/%s/addresses/%s/txs?limit=9", h.chainID, sender)
	for p := path; ; {
		var pg struct {
			Items      []map[string]any
			NextCursor *string `json:"next_cursor"`
		}
		h.getJSON(p, 200, &pg)
		for _, tx := range pg.Items {
			got = append(got, tx["hash"])
		}
		if pg.NextCursor == nil {
			break
		}
		p = path + "&cursor=" + *pg.NextCursor
	}
	var wantHashes []any
	for _, tx := range slices.Backward(want) {
		wantHashes = append(wantHashes, tx["hash"])
	}
	require.Equal(t, wantHashes, got, "newest first")

	// Etherscan txlist, oldest first: every field against the node.
	var env struct {
		Status, Message string
		Result          []map[string]any
	}
	h.es(200, &env, "module", "account", "action", "txlist", "address", sender, "startblock", "0", "endblock", "99999999",
		"page", "1", "offset", "1000", "sort", "asc", "apikey", "ignored")
	require.Equal(t, "1", env.Status)
	require.Equal(t, "OK", env.Message)
	require.Len(t, env.Result, len(want))
	dec := func(v any) string { return hexBig(t, v) }
	for i, tx := range want {
		r := nc.receipts[tx["hash"].(string)]
		bn := hexNum(t, tx["blockNumber"])
		input := tx["input"].(string)
		method := "0x"
		if len(input) >= 10 {
			method = input[:10]
		}
		to, _ := tx["to"].(string)
		created, _ := r["contractAddress"].(string)
		isError, status := "0", "1"
		if hexNum(t, r["status"]) == 0 {
			isError, status = "1", "0"
		}
		require.Equal(t, map[string]any{
			"blockNumber": fmt.Sprint(bn), "timeStamp": dec(nc.blocks[bn]["timestamp"]), "hash": tx["hash"],
			"nonce": dec(tx["nonce"]), "blockHash": tx["blockHash"], "transactionIndex": dec(tx["transactionIndex"]),
			"from": tx["from"], "to": to, "value": dec(tx["value"]), "gas": dec(tx["gas"]),
			"gasPrice": dec(r["effectiveGasPrice"]), "isError": isError, "txreceipt_status": status, "input": input,
			"contractAddress": created, "cumulativeGasUsed": dec(r["cumulativeGasUsed"]), "gasUsed": dec(r["gasUsed"]),
			"confirmations": fmt.Sprint(head - bn + 1), "methodId": method, "functionName": "",
		}, env.Result[i], "txlist entry %d", i)
	}
	// A page of the newest first.
	h.es(200, &env, "module", "account", "action", "txlist", "address", sender, "page", "2", "offset", "3", "sort", "desc")
	require.Len(t, env.Result, 3)
	for i, g := range env.Result {
		require.Equal(t, want[len(want)-4-i]["hash"], g["hash"])
	}
	h.es(200, &env, "module", "account", "action", "txlist", "address", "0x"+strings.Repeat("0", 39)+"2")
	require.Equal(t, "0", env.Status)
	require.Equal(t, "No transactions found", env.Message)
}

func checkTimes(h *apiHarness, nc *nodeChain, head uint64) {
	t := h.t
	times := make([]uint64, head+1)
	for n := range times {
		times[n] = hexNum(t, nc.blocks[n]["timestamp"])
	}
	rng := rand.New(rand.NewPCG(7, 11))
	for range 10 {
		n := rng.Uint64N(head + 1)
		for _, ts := range []uint64{times[n], times[n] + 1, times[n] - 1} {
			before, after := -1, -1
			for i, bt := range times {
				if bt <= ts {
					before = i
				}
				if bt >= ts && after < 0 {
					after = i
				}
			}
			for closest, want := range map[string]int{"before": before, "after": after} {
				var env struct{ Status, Message, Result string }
				h.es(200, &env, "module", "block", "action", "getblocknobytime", "timestamp", fmt.Sprint(ts), "closest", closest)
				if want < 0 {
					require.Equal(t, "0", env.Status)
					require.Contains(t, env.Result, "No closest block found")
					continue
				}
				require.Equal(t, "1", env.Status, "%+v", env)
				require.Equal(t, fmt.Sprint(want), env.Result, "%s %d", closest, ts)
			}
		}
	}
	a, b := rng.Uint64N(head/2), head/2+rng.Uint64N(head/2)
	var pg struct{ Items []map[string]any }
	h.getJSON(fmt.Sprintf("/v1/chains/%s/blocks?from_time=%d&to_time=%d&limit=100", h.chainID, times[a], times[b]), 200, &pg)
	var want []uint64
	for n, bt := range times {
		if bt >= times[a] && bt <= times[b] {
			want = append(want, uint64(n))
		}
	}
	var got []uint64
	for _, b := range pg.Items {
		got = append(got, jsonNum(t, b["number"]))
	}
	require.Equal(t, want, got)
}

func checkStatus(h *apiHarness, head uint64) {
	t := h.t
	code, body := h.get("/v1/chains/" + h.chainID + "/status")
	require.Equal(t, 200, code)
	require.NotContains(t, string(body), h.nodeURL, "the node URL never appears")
	var st api.Status
	require.NoError(t, json.Unmarshal(body, &st))
	require.Empty(t, st.Errors)
	require.NotNil(t, st.Head)
	require.NotNil(t, st.Watermark)
	require.GreaterOrEqual(t, *st.Head, head)
	require.GreaterOrEqual(t, *st.Watermark, head)
	require.Equal(t, *st.Head-*st.Watermark, *st.LagBlocks)
	if st.AggregatorHeight != nil { // the worker's aggregator may have run
		require.LessOrEqual(t, *st.AggregatorHeight, *st.Watermark, "statistics never hold above the watermark")
	}
	require.Nil(t, st.PrunedHeight)
}

// checkStats waits for the worker's aggregator to count the chain, then
// compares the API's totals for random ranges with sums over the raw
// tables.
func checkStats(h *apiHarness, head uint64) {
	t := h.t
	ctx := context.Background()
	// The worker's aggregator counts the chain (its Schedule runs every
	// aggregator.interval); the route answers from its rows.
	waitFor(t, time.Minute, fmt.Sprintf("%s aggregated up to %d", h.chainID, head), func() (bool, string) {
		n, ok, err := h.store.LoadState(ctx, h.chainID, storage.StateAggregatorHeight)
		require.NoError(t, err)
		return ok && n >= head, fmt.Sprintf("aggregator_height %d (saved: %v)", n, ok)
	})
	waitFor(t, 10*time.Second, "the status route reports the aggregator's height", func() (bool, string) {
		var st api.Status
		h.getJSON("/v1/chains/"+h.chainID+"/status", 200, &st)
		return st.AggregatorHeight != nil && *st.AggregatorHeight == head, fmt.Sprintf("aggregator_height %v", st.AggregatorHeight)
	})

	sum := func(sql string, from, to uint64) uint64 {
		var n uint64
		require.NoError(t, h.conn.QueryRow(ctx, sql, h.chainID, from, to).Scan(&n))
		return n
	}
	rng := rand.New(rand.NewPCG(3, 5))
	for i := range 25 {
		from := rng.Uint64N(head + 1)
		to := from + rng.Uint64N(head-from+1)
		if i == 0 {
			from, to = 0, head
		}
		var st api.Stats
		h.getJSON(fmt.Sprintf("/v1/chains/%s/stats?from=%d&to=%d", h.chainID, from, to), 200, &st)
		require.True(t, st.Complete)
		require.Equal(t, to, *st.CountedTo)
		require.Equal(t, "eventual", st.Consistency)
		require.Equal(t, sum(`SELECT count() FROM transactions FINAL WHERE chain_id = ? AND block_number BETWEEN ? AND ? AND is_canonical = 1`, from, to),
			st.Transactions, "transactions %d-%d", from, to)
		require.Equal(t, sum(`SELECT count() FROM logs FINAL WHERE chain_id = ? AND block_number BETWEEN ? AND ? AND is_canonical = 1`, from, to),
			st.Logs, "logs %d-%d", from, to)
		require.Equal(t, sum(`SELECT sum(size) FROM blocks FINAL WHERE chain_id = ? AND number BETWEEN ? AND ? AND is_canonical = 1`, from, to),
			st.Bytes, "bytes %d-%d", from, to)
	}
	var st api.Stats
	h.getJSON(fmt.Sprintf("/v1/chains/%s/stats?from=0&to=%d", h.chainID, head+100), 200, &st)
	require.False(t, st.Complete, "beyond the aggregator's height")
	require.Equal(t, head, *st.CountedTo)
}

// checkPruning marks heights up to p pruned: they answer 410 everywhere,
// and nothing above p is lost.
func checkPruning(h *apiHarness, nc *nodeChain, head uint64, sender string) {
	t := h.t
	p := head / 2
	require.NoError(t, h.store.SaveState(context.Background(), h.chainID, storage.StatePrunedHeight, p))
	for _, path := range []string{
		fmt.Sprintf("/blocks/%d", p), fmt.Sprintf("/blocks/%d", 0), fmt.Sprintf("/blocks/%d/txs", p),
		fmt.Sprintf("/blocks?from=%d", p), fmt.Sprintf("/logs?from=%d&to=%d", p, head),
		fmt.Sprintf("/addresses/%s/txs?from=%d", sender, p),
	} {
		var e map[string]any
		h.getJSON("/v1/chains/"+h.chainID+path, 410, &e)
		require.Equal(t, "gone", e["error"], path)
		require.Contains(t, e["message"], fmt.Sprintf("keeps heights above %d", p), path)
	}
	for n := p + 1; n <= head; n++ {
		var b map[string]any
		h.getJSON(fmt.Sprintf("/v1/chains/%s/blocks/%d", h.chainID, n), 200, &b)
		require.Equal(t, nc.blocks[n]["hash"], b["hash"])
	}
	var above []map[string]any
	for _, l := range nc.logs {
		if hexNum(t, l["blockNumber"]) > p {
			above = append(above, l)
		}
	}
	requireSameLogs(t, above, h.restLogs(fmt.Sprintf("/v1/chains/%s/logs?from=%d&to=%d", h.chainID, p+1, head)))
	var pg struct{ Items []map[string]any }
	h.getJSON(fmt.Sprintf("/v1/chains/%s/addresses/%s/txs?limit=100", h.chainID, sender), 200, &pg)
	wantAbove := 0
	for _, tx := range nodeAddressTxs(nc, sender) {
		if hexNum(t, tx["blockNumber"]) > p {
			wantAbove++
		}
	}
	require.Len(t, pg.Items, wantAbove, "every transaction above the pruned height, none below")

	var rpcErr struct {
		Error struct {
			Code    int
			Message string
		}
	}
	h.es(200, &rpcErr, "module", "proxy", "action", "eth_getBlockByNumber", "tag", hexutil.Uint64(p).String())
	require.Contains(t, rpcErr.Error.Message, "pruned")
	var env struct{ Status, Message, Result string }
	h.es(200, &env, "module", "account", "action", "txlist", "address", sender, "startblock", fmt.Sprint(p))
	require.Equal(t, "NOTOK", env.Message)
	require.Contains(t, env.Result, "pruned")
	var st api.Status
	h.getJSON("/v1/chains/"+h.chainID+"/status", 200, &st)
	require.Equal(t, p, *st.PrunedHeight)
}

// checkBinary runs `indexer api` as its own process on the same data: it
// listens where it says, serves the indexed blocks and its /metrics, stops
// cleanly on SIGTERM, and never prints the node's URL.
func checkBinary(h *apiHarness, nc *nodeChain) {
	t := h.t
	bin := buildIndexer(t)
	cfgPath := writeConfig(t, h.chainID, h.nodeURL, "", nil)
	cmd := exec.Command(bin, "api", "--config", cfgPath, "--log-level", "info", "--listen", "127.0.0.1:0")
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
		}
	}()
	var addr string
	waitFor(t, 30*time.Second, "indexer api to listen", func() (bool, string) {
		for _, line := range strings.Split(out.String(), "\n") {
			var rec struct{ Msg, Addr string }
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "query API listening" {
				addr = rec.Addr
				return true, ""
			}
		}
		return false, out.String()
	})
	base := "http://" + addr
	var b map[string]any
	resp, err := h.client.Get(fmt.Sprintf("%s/v1/chains/%s/blocks/1", base, h.chainID))
	require.NoError(t, err)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&b))
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	require.Equal(t, nc.blocks[1]["hash"], b["hash"])
	resp, err = h.client.Get(base + "/metrics")
	require.NoError(t, err)
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Contains(t, string(metrics), `api_requests_total{code="200",route="GET /v1/chains/{id}/blocks/{height}"} 1`)
	require.NotContains(t, string(metrics), h.nodeURL)

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-exited:
		require.NoError(t, err, "%s", out.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("indexer api did not stop on SIGTERM: %s", out.String())
	}
	require.NotContains(t, out.String(), h.nodeURL, "the node URL never appears in the logs")
}

// syncBuffer is a bytes.Buffer a process writes while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
