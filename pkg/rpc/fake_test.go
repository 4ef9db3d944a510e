package rpc_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"github.com/tideline-dev/tideline/pkg/rpc"
)

// fakeHeight is the one block the fake node has.
const fakeHeight = 5

func hash(n int) string { return fmt.Sprintf("0x%064x", n) }
func addr(n int) string { return fmt.Sprintf("0x%040x", n) }

// fixture is a consistent block at fakeHeight with two transactions (a
// type-2 call with two logs, a legacy contract creation with one) and
// their receipts. Tests break one field at a time.
type fixture struct {
	block    map[string]any
	receipts []map[string]any
}

func newFixture() *fixture {
	blockHash := hash(0xb5)
	num := fmt.Sprintf("0x%x", fakeHeight)
	txs := []any{
		map[string]any{
			"type": "0x2", "hash": hash(0x100), "blockHash": blockHash, "blockNumber": num,
			"transactionIndex": "0x0", "from": addr(1), "to": addr(2), "value": "0xde0b6b3a7640000",
			"nonce": "0x0", "gas": "0x5208", "gasPrice": "0x3b9aca00", "maxFeePerGas": "0x77359400",
			"maxPriorityFeePerGas": "0x1", "input": "0x", "chainId": "0x1", "v": "0x0", "r": "0x1", "s": "0x1",
		},
		map[string]any{
			// Legacy: no "type" field at all, and a contract creation.
			"hash": hash(0x101), "blockHash": blockHash, "blockNumber": num,
			"transactionIndex": "0x1", "from": addr(3), "to": nil, "value": "0x0",
			"nonce": "0x7", "gas": "0x30d40", "gasPrice": "0x3b9aca00", "input": "0x6000", "v": "0x1b", "r": "0x1", "s": "0x1",
		},
	}
	logsFor := func(tx string, txIndex string, indices ...int) []any {
		var out []any
		for _, li := range indices {
			out = append(out, map[string]any{
				"address": addr(0xc0), "topics": []any{hash(0xa0 + li)}, "data": "0x01",
				"blockNumber": num, "blockHash": blockHash, "transactionHash": tx,
				"transactionIndex": txIndex, "logIndex": fmt.Sprintf("0x%x", li), "removed": false,
			})
		}
		return out
	}
	return &fixture{
		block: map[string]any{
			"number": num, "hash": blockHash, "parentHash": hash(0xb4), "timestamp": "0x6553f100",
			"miner": addr(0xfe), "gasUsed": "0x1e848", "gasLimit": "0x1c9c380", "baseFeePerGas": "0x3b9aca00",
			"size": "0x300", "extraData": "0x", "transactions": txs,
		},
		receipts: []map[string]any{
			{
				"transactionHash": hash(0x100), "transactionIndex": "0x0", "blockHash": blockHash, "blockNumber": num,
				"from": addr(1), "to": addr(2), "status": "0x1", "gasUsed": "0x5208", "cumulativeGasUsed": "0x5208",
				"effectiveGasPrice": "0x3b9aca01", "contractAddress": nil, "type": "0x2",
				"logs": logsFor(hash(0x100), "0x0", 0, 1),
			},
			{
				"transactionHash": hash(0x101), "transactionIndex": "0x1", "blockHash": blockHash, "blockNumber": num,
				"from": addr(3), "to": nil, "status": "0x0", "gasUsed": "0x19640", "cumulativeGasUsed": "0x1e848",
				"effectiveGasPrice": "0x3b9aca00", "contractAddress": addr(0xcc), "type": "0x0",
				"logs": logsFor(hash(0x101), "0x1", 2),
			},
		},
	}
}

func (f *fixture) tx(i int) map[string]any {
	return f.block["transactions"].([]any)[i].(map[string]any)
}

func (f *fixture) log(receipt, i int) map[string]any {
	return f.receipts[receipt]["logs"].([]any)[i].(map[string]any)
}

// reply overrides the fake node's answer to one call: an HTTP status, a
// JSON-RPC error or a raw result.
type reply struct {
	status  int
	code    int
	message string
	result  json.RawMessage
	hang    bool // never answer; the client's timeout must end the call
}

// fakeNode is a JSON-RPC server over httptest that answers from a fixture
// and lets a test inject faults per method and attempt.
type fakeNode struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex
	fix    *fixture
	calls  map[string]int // calls per method, batch elements included
	posts  map[string]int // HTTP requests per (first) method
	faults func(method string, call int, params []json.RawMessage) *reply
}

func newFakeNode(t *testing.T) *fakeNode {
	n := &fakeNode{t: t, fix: newFixture(), calls: map[string]int{}, posts: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/", n.serve)
	n.srv = httptest.NewServer(mux)
	t.Cleanup(n.srv.Close)
	return n
}

func (n *fakeNode) setFaults(f func(method string, call int, params []json.RawMessage) *reply) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.faults = f
}

func (n *fakeNode) count(method string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.calls[method]
}

func (n *fakeNode) postCount(method string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.posts[method]
}

type rpcRequest struct {
	ID     json.RawMessage   `json:"id"`
	Method string            `json:"method"`
	Params []json.RawMessage `json:"params"`
}

func (n *fakeNode) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var reqs []rpcRequest
	batch := strings.HasPrefix(strings.TrimSpace(string(body)), "[")
	if batch {
		err = json.Unmarshal(body, &reqs)
	} else {
		var one rpcRequest
		err = json.Unmarshal(body, &one)
		reqs = []rpcRequest{one}
	}
	if err != nil || len(reqs) == 0 {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	var out []map[string]any
	for i, req := range reqs {
		rep := n.answer(req, i == 0)
		if rep.hang {
			<-r.Context().Done()
			return
		}
		if rep.status != 0 {
			http.Error(w, fmt.Sprintf("injected HTTP %d", rep.status), rep.status)
			return
		}
		msg := map[string]any{"jsonrpc": "2.0", "id": req.ID}
		if rep.code != 0 {
			msg["error"] = map[string]any{"code": rep.code, "message": rep.message}
		} else {
			msg["result"] = rep.result
		}
		out = append(out, msg)
	}
	w.Header().Set("Content-Type", "application/json")
	if batch {
		_ = json.NewEncoder(w).Encode(out)
	} else {
		_ = json.NewEncoder(w).Encode(out[0])
	}
}

func (n *fakeNode) answer(req rpcRequest, first bool) reply {
	n.mu.Lock()
	n.calls[req.Method]++
	call := n.calls[req.Method]
	if first {
		n.posts[req.Method]++
	}
	faults := n.faults
	fix := n.fix
	n.mu.Unlock()
	if faults != nil {
		if rep := faults(req.Method, call, req.Params); rep != nil {
			return *rep
		}
	}
	mustJSON := func(v any) json.RawMessage {
		b, err := json.Marshal(v)
		require.NoError(n.t, err)
		return b
	}
	var param string
	if len(req.Params) > 0 {
		_ = json.Unmarshal(req.Params[0], &param)
	}
	switch req.Method {
	case "eth_blockNumber":
		return reply{result: mustJSON(fmt.Sprintf("0x%x", fakeHeight))}
	case "eth_getBlockByNumber":
		if param != fmt.Sprintf("0x%x", fakeHeight) {
			return reply{result: json.RawMessage("null")}
		}
		return reply{result: mustJSON(fix.block)}
	case "eth_getBlockReceipts":
		if param != fix.block["hash"] {
			return reply{result: json.RawMessage("null")}
		}
		return reply{result: mustJSON(fix.receipts)}
	case "eth_getTransactionReceipt":
		for _, r := range fix.receipts {
			if r["transactionHash"] == param {
				return reply{result: mustJSON(r)}
			}
		}
		return reply{result: json.RawMessage("null")}
	default:
		return reply{code: -32601, message: "the method " + req.Method + " does not exist/is not available"}
	}
}

// fastConfig retries quickly so that fault tests stay short.
func fastConfig(url string) rpc.EthereumConfig {
	return rpc.EthereumConfig{
		ChainID:        "1",
		EndpointName:   "fake",
		URL:            url,
		Timeout:        2 * time.Second,
		MaxAttempts:    4,
		BackoffInitial: time.Millisecond,
		BackoffMax:     5 * time.Millisecond,
	}
}

func newClient(t *testing.T, cfg rpc.EthereumConfig, reg prometheus.Registerer) *rpc.Ethereum {
	t.Helper()
	var m *rpc.Metrics
	if reg != nil {
		m = rpc.NewMetrics(reg)
	}
	c, err := rpc.NewEthereum(t.Context(), cfg, zaptest.NewLogger(t), m)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}
