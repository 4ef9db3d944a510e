package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/storage"
)

// rpcPost sends a body to the chain's JSON-RPC route, checks the answer
// against docs/openapi.json and returns it.
func (a *testAPI) rpcPost(t *testing.T, chain, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, a.srv.URL+"/v1/chains/"+chain+"/rpc", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	req.Body = io.NopCloser(strings.NewReader(body))
	require.NoError(t, a.contract.Check(req, resp.StatusCode, resp.Header, b))
	return resp.StatusCode, b
}

// rpc calls one method on the test chain and returns its reply.
func (a *testAPI) rpc(t *testing.T, method string, params ...any) rpcReply {
	t.Helper()
	if params == nil {
		params = []any{}
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
	require.NoError(t, err)
	code, b := a.rpcPost(t, testChain, string(body))
	require.Equal(t, http.StatusOK, code, "%s", b)
	var r rpcReply
	require.NoError(t, json.Unmarshal(b, &r), "%s", b)
	require.Equal(t, "7", string(r.ID))
	return r
}

// ok is the call's result decoded into a generic value (nil for null).
func (a *testAPI) rpcOK(t *testing.T, method string, params ...any) any {
	t.Helper()
	r := a.rpc(t, method, params...)
	require.Nil(t, r.Error, "%s %v: %+v", method, params, r.Error)
	var v any
	require.NoError(t, json.Unmarshal(r.Result, &v))
	return v
}

// rpcErr is the call's error code and message.
func (a *testAPI) rpcErr(t *testing.T, method string, params ...any) (int, string) {
	t.Helper()
	r := a.rpc(t, method, params...)
	require.NotNil(t, r.Error, "%s %v answered %s", method, params, r.Result)
	return r.Error.Code, r.Error.Message
}

func withChainID(id uint64) func(*Options) {
	return func(o *Options) {
		ch := o.Chains[testChain]
		ch.ExpectedChainID = id
		o.Chains[testChain] = ch
	}
}

// Blocks, transactions and receipts are the stored objects; a block above
// the watermark is null, one at or below the pruned height an error.
func TestJSONRPCBlocksTransactionsReceipts(t *testing.T) {
	a := newTestAPI(t, config.API{}, withChainID(31337))
	data := sampleChain(10)
	a.write(t, data)

	require.Equal(t, "0x7a69", a.rpcOK(t, "eth_chainId"))
	require.Equal(t, "31337", a.rpcOK(t, "net_version"))
	require.Equal(t, "0x9", a.rpcOK(t, "eth_blockNumber"))

	b4 := a.rpcOK(t, "eth_getBlockByNumber", "0x4", false).(map[string]any)
	require.Equal(t, "0x4", b4["number"])
	require.Equal(t, h32('b', 4), b4["hash"])
	require.Equal(t, h32('5', 4), b4["stateRoot"], "a key only the raw object holds")
	require.Equal(t, []any{h32('a', 8), h32('a', 9)}, b4["transactions"])
	require.Equal(t, b4, a.rpcOK(t, "eth_getBlockByHash", h32('b', 4), false))
	require.Equal(t, "0x9", a.rpcOK(t, "eth_getBlockByNumber", "latest", false).(map[string]any)["number"])
	require.Equal(t, "0x0", a.rpcOK(t, "eth_getBlockByNumber", "earliest", false).(map[string]any)["number"])
	require.Nil(t, a.rpcOK(t, "eth_getBlockByNumber", "0xa", false), "above the watermark: not there yet")
	require.Nil(t, a.rpcOK(t, "eth_getBlockByHash", h32('b', 99), false))

	full := a.rpcOK(t, "eth_getBlockByNumber", "0x4", true).(map[string]any)["transactions"].([]any)
	require.Len(t, full, 2)
	tx := full[0].(map[string]any)
	require.Equal(t, h32('a', 8), tx["hash"])
	require.Equal(t, "0x4563918244f40000", tx["value"], "5 ether")
	require.Equal(t, "0xa9059cbb00000000", tx["input"])
	require.Equal(t, tx, a.rpcOK(t, "eth_getTransactionByHash", h32('a', 8)))
	require.Equal(t, full[1], a.rpcOK(t, "eth_getTransactionByBlockNumberAndIndex", "0x4", "0x1"))
	require.Equal(t, full[1], a.rpcOK(t, "eth_getTransactionByBlockHashAndIndex", h32('b', 4), "0x1"))
	require.Nil(t, a.rpcOK(t, "eth_getTransactionByBlockNumberAndIndex", "0x4", "0x2"))
	require.Nil(t, a.rpcOK(t, "eth_getTransactionByHash", h32('a', 999)))

	require.Equal(t, "0x2", a.rpcOK(t, "eth_getBlockTransactionCountByNumber", "0x4"))
	require.Equal(t, "0x1", a.rpcOK(t, "eth_getBlockTransactionCountByHash", h32('b', 3)))
	require.Equal(t, "0x0", a.rpcOK(t, "eth_getUncleCountByBlockNumber", "0x4"))
	require.Nil(t, a.rpcOK(t, "eth_getUncleCountByBlockHash", h32('b', 99)))

	r8 := a.rpcOK(t, "eth_getTransactionReceipt", h32('a', 8)).(map[string]any)
	require.Equal(t, "0x1", r8["status"])
	require.Len(t, r8["logs"], 1)
	require.Equal(t, "0x5208", r8["cumulativeGasUsed"])
	failed := a.rpcOK(t, "eth_getTransactionReceipt", h32('a', 5)).(map[string]any)
	require.Equal(t, "0x0", failed["status"], "the creation at height 2 failed")
	require.Equal(t, contractOf(2), failed["contractAddress"])
	receipts := a.rpcOK(t, "eth_getBlockReceipts", "0x4").([]any)
	require.Equal(t, []any{r8, a.rpcOK(t, "eth_getTransactionReceipt", h32('a', 9))}, receipts)
	require.Equal(t, receipts, a.rpcOK(t, "eth_getBlockReceipts", h32('b', 4)))
	require.Equal(t, receipts, a.rpcOK(t, "eth_getBlockReceipts", map[string]any{"blockHash": h32('b', 4)}))

	// A batch by hash is read ahead in bulk; its answers are the single
	// calls' (an unknown hash null, a repeated one answered twice).
	var calls []string
	var singles []string
	for i, c := range []struct{ method, hash string }{
		{"eth_getTransactionReceipt", h32('a', 8)}, {"eth_getTransactionReceipt", h32('a', 9)},
		{"eth_getTransactionByHash", h32('a', 8)}, {"eth_getTransactionReceipt", h32('a', 999)},
		{"eth_getTransactionReceipt", h32('a', 5)}, {"eth_getTransactionReceipt", h32('a', 8)},
	} {
		calls = append(calls, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"%s","params":["%s"]}`, i, c.method, c.hash))
		singles = append(singles, string(a.rpc(t, c.method, c.hash).Result))
	}
	code, body := a.rpcPost(t, testChain, "["+strings.Join(calls, ",")+"]")
	require.Equal(t, http.StatusOK, code)
	var batch []rpcReply
	require.NoError(t, json.Unmarshal(body, &batch))
	require.Len(t, batch, len(singles))
	for i, r := range batch {
		require.Equal(t, fmt.Sprint(i), string(r.ID))
		require.JSONEq(t, singles[i], string(r.Result), "call %d", i)
	}
	require.Equal(t, "null", singles[3])

	// A batch of receipts alone reads the transactions without their own
	// JSON: its answers are still the single calls'.
	receiptCalls, receiptSingles := []string{}, []string{}
	for i, c := range calls {
		if strings.Contains(c, "eth_getTransactionReceipt") {
			receiptCalls, receiptSingles = append(receiptCalls, c), append(receiptSingles, singles[i])
		}
	}
	code, body = a.rpcPost(t, testChain, "["+strings.Join(receiptCalls, ",")+"]")
	require.Equal(t, http.StatusOK, code)
	require.NoError(t, json.Unmarshal(body, &batch))
	require.Len(t, batch, len(receiptSingles))
	for i, r := range batch {
		require.JSONEq(t, receiptSingles[i], string(r.Result), "receipt %d", i)
	}

	// Pruned heights are an error, not null: the node has them.
	require.NoError(t, a.store.SaveState(context.Background(), testChain, storage.StatePrunedHeight, 2))
	code, msg := a.rpcErr(t, "eth_getBlockByNumber", "0x1", false)
	require.Equal(t, rpcServerError, code)
	require.Contains(t, msg, "pruned")
	require.Equal(t, "0x3", a.rpcOK(t, "eth_getBlockByNumber", "0x3", false).(map[string]any)["number"])
	require.Equal(t, "0x3", a.rpcOK(t, "eth_getBlockByNumber", "earliest", false).(map[string]any)["number"])
}

func TestJSONRPCGetLogs(t *testing.T) {
	a := newTestAPI(t, config.API{RPCMaxLogs: 4})
	a.write(t, sampleChain(10))
	logs := func(filter map[string]any) []any {
		t.Helper()
		return a.rpcOK(t, "eth_getLogs", filter).([]any)
	}
	other := "0x00000000000000000000000000000000000000ff"
	require.Len(t, logs(map[string]any{"fromBlock": "0x2", "toBlock": "0x5"}), 4)
	require.Len(t, logs(map[string]any{}), 1, "latest to latest")
	require.Len(t, logs(map[string]any{"fromBlock": "0x6", "address": contractOf(0)}), 4)
	require.Len(t, logs(map[string]any{"fromBlock": "0x6", "address": []string{other, "0x" + strings.ToUpper(contractOf(0)[2:])}}), 4,
		"hex is compared lower-cased")
	require.Len(t, logs(map[string]any{"fromBlock": "0x6", "address": []string{other, contractOf(0)}}), 4)
	require.Len(t, logs(map[string]any{"fromBlock": "0x6", "address": other}), 0)
	require.Len(t, logs(map[string]any{"fromBlock": "0x6", "topics": []any{eventTopic, nil, padAddress(addrB)}}), 4)
	require.Len(t, logs(map[string]any{"fromBlock": "0x6", "topics": []any{[]any{h32('e', 9), eventTopic}, padAddress(addrA)}}), 4)
	require.Len(t, logs(map[string]any{"fromBlock": "0x6", "topics": []any{[]any{h32('e', 9), nil}, padAddress(addrA)}}), 4,
		"a null in a position's list matches any topic")
	require.Len(t, logs(map[string]any{"fromBlock": "0x6", "topics": []any{nil, padAddress(addrB)}}), 0)
	one := logs(map[string]any{"blockHash": h32('b', 7)})
	require.Len(t, one, 1)
	l := one[0].(map[string]any)
	require.Equal(t, "0x7", l["blockNumber"])
	require.Equal(t, false, l["removed"])
	require.Equal(t, []any{eventTopic, padAddress(addrA), padAddress(addrB)}, l["topics"])

	// More than rpc_max_logs: refused with the range that fits.
	code, msg := a.rpcErr(t, "eth_getLogs", map[string]any{"fromBlock": "0x0", "toBlock": "0x9"})
	require.Equal(t, rpcLimitExceeded, code)
	require.Contains(t, msg, "[0x0, 0x3]")
	require.Len(t, logs(map[string]any{"fromBlock": "0x0", "toBlock": "0x3"}), 4)

	for _, bad := range []struct {
		filter any
		code   int
		says   string
	}{
		{map[string]any{"fromBlock": "0x5", "toBlock": "0x4"}, rpcInvalidParams, "above toBlock"},
		{map[string]any{"toBlock": "0x14"}, rpcServerError, "above the indexed head 0x9"},
		{map[string]any{"blockHash": h32('b', 7), "fromBlock": "0x1"}, rpcInvalidParams, "not both"},
		{map[string]any{"blockHash": h32('b', 99)}, rpcServerError, "unknown block"},
		{map[string]any{"topics": []any{nil, nil, nil, nil, nil}}, rpcInvalidParams, "at most 4"},
		{map[string]any{"topics": []any{"0x12"}}, rpcInvalidParams, "topics[0]"},
		{map[string]any{"address": "0x12"}, rpcInvalidParams, "20-byte"},
		{map[string]any{"fromBlock": "tomorrow"}, rpcInvalidParams, "fromBlock"},
		{"0x1", rpcInvalidParams, "filter object"},
	} {
		code, msg := a.rpcErr(t, "eth_getLogs", bad.filter)
		require.Equal(t, bad.code, code, "%v: %s", bad.filter, msg)
		require.Contains(t, msg, bad.says, "%v", bad.filter)
	}
}

// The protocol: batches answered in order, notifications not answered,
// each malformed call its own error, limits before any read.
func TestJSONRPCProtocol(t *testing.T) {
	a := newTestAPI(t, config.API{RPCMaxBatch: 4})
	a.write(t, sampleChain(3))

	code, b := a.rpcPost(t, testChain, `[
		{"jsonrpc":"2.0","id":"a","method":"eth_blockNumber"},
		{"jsonrpc":"2.0","method":"eth_blockNumber"},
		{"jsonrpc":"2.0","id":2,"method":"eth_sendRawTransaction","params":["0x00"]},
		{"jsonrpc":"2.0","id":null,"method":"eth_getBlockByNumber","params":["0x1",false,true]}]`)
	require.Equal(t, http.StatusOK, code)
	var replies []rpcReply
	require.NoError(t, json.Unmarshal(b, &replies), "%s", b)
	require.Len(t, replies, 3, "the notification is not answered")
	require.Equal(t, `"a"`, string(replies[0].ID))
	require.Equal(t, `"0x2"`, string(replies[0].Result))
	require.Equal(t, "2", string(replies[1].ID))
	require.Equal(t, rpcMethodNotFound, replies[1].Error.Code)
	require.Equal(t, "null", string(replies[2].ID))
	require.Equal(t, rpcInvalidParams, replies[2].Error.Code)

	one := func(body string) rpcReply {
		t.Helper()
		code, b := a.rpcPost(t, testChain, body)
		require.Equal(t, http.StatusOK, code, "%s", b)
		var r rpcReply
		require.NoError(t, json.Unmarshal(b, &r), "%s", b)
		return r
	}
	for body, want := range map[string]int{
		`{"jsonrpc":"2.0","id":1,`:                              rpcParseError,
		`[{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber"},`: rpcParseError,
		`[]`:                       rpcInvalidRequest,
		`[1,2,3,4,5]`:              rpcInvalidRequest,
		`{"jsonrpc":"2.0","id":1}`: rpcInvalidRequest,
		`{"jsonrpc":"1.0","id":1,"method":"eth_blockNumber"}`:                              rpcInvalidRequest,
		`{"jsonrpc":"2.0","id":{},"method":"eth_blockNumber"}`:                             rpcInvalidRequest,
		`{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":{}}`:                  rpcInvalidParams,
		`{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[1]}`:                 rpcInvalidParams,
		`{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":[]}`:             rpcInvalidParams,
		`{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["0x1","yes"]}`:  rpcInvalidParams,
		`{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["safe",false]}`: rpcServerError,
		`{"jsonrpc":"2.0","id":1,"method":"eth_getTransactionByHash","params":["0x12"]}`:   rpcInvalidParams,
		`{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}`:                                  rpcServerError, // no expected_chain_id
	} {
		r := one(body)
		require.NotNil(t, r.Error, "%s", body)
		require.Equal(t, want, r.Error.Code, "%s: %s", body, r.Error.Message)
	}

	code, _ = a.rpcPost(t, "nope", `{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber"}`)
	require.Equal(t, http.StatusNotFound, code)
	code, b = a.rpcPost(t, testChain, `{"jsonrpc":"2.0","method":"eth_blockNumber"}`)
	require.Equal(t, http.StatusNoContent, code)
	require.Empty(t, b)
	resp, err := http.Get(a.srv.URL + "/v1/chains/c1/rpc")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	require.Equal(t, "POST", resp.Header.Get("Allow"))

	m := a.metrics(t)
	require.Contains(t, m, `api_rpc_calls_total{method="eth_blockNumber",outcome="ok"}`)
	require.Contains(t, m, `api_rpc_calls_total{method="other",outcome="client_error"}`)
	require.NotContains(t, m, "eth_sendRawTransaction", "an unknown method is not a label")
}

// Keys and limits are the other routes', answered as JSON-RPC errors.
func TestJSONRPCRefusals(t *testing.T) {
	call := `{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber"}`
	limited := newTestAPI(t, config.API{RateLimit: 0.001, Burst: 1})
	limited.write(t, sampleChain(1))
	code, _ := limited.rpcPost(t, testChain, call)
	require.Equal(t, http.StatusOK, code)
	code, b := limited.rpcPost(t, testChain, `[`+call+`,`+call+`]`)
	require.Equal(t, http.StatusTooManyRequests, code)
	var r rpcReply
	require.NoError(t, json.Unmarshal(b, &r), "%s", b)
	require.Equal(t, rpcLimitExceeded, r.Error.Code)
	require.Equal(t, "null", string(r.ID))

	closed := newTestAPI(t, anonymousOff)
	code, b = closed.rpcPost(t, testChain, call)
	require.Equal(t, http.StatusUnauthorized, code)
	require.NoError(t, json.Unmarshal(b, &r), "%s", b)
	require.Equal(t, rpcServerError, r.Error.Code)
	require.Contains(t, r.Error.Message, "API key")
}

// countingReads is the real store, counting the one-at-a-time reads a
// batch by hash should not make.
type countingReads struct {
	ChainStore
	byHash, txLogs atomic.Int64
}

func (c *countingReads) TxPositionsByHash(ctx context.Context, chainID, hash string, lo, hi uint64) ([]storage.Position, error) {
	c.byHash.Add(1)
	return c.ChainStore.TxPositionsByHash(ctx, chainID, hash, lo, hi)
}

func (c *countingReads) TxLogs(ctx context.Context, chainID string, p storage.Position) ([]chaindata.Log, error) {
	c.txLogs.Add(1)
	return c.ChainStore.TxLogs(ctx, chainID, p)
}

// A batch of 100 receipts costs three reads, not three hundred.
func TestJSONRPCBatchReadsByHashTogether(t *testing.T) {
	var counted *countingReads
	a := newTestAPI(t, config.API{}, func(o *Options) {
		counted = &countingReads{ChainStore: o.Store.Chain}
		o.Store.Chain = counted
	})
	data := sampleChain(60)
	a.write(t, data)
	var calls []string
	for i := range 100 {
		h := data[i%60].Transactions[0].Hash
		calls = append(calls, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"eth_getTransactionReceipt","params":["%s"]}`, i, h))
	}
	code, body := a.rpcPost(t, testChain, "["+strings.Join(calls, ",")+"]")
	require.Equal(t, http.StatusOK, code)
	var batch []rpcReply
	require.NoError(t, json.Unmarshal(body, &batch))
	require.Len(t, batch, 100)
	for i, r := range batch {
		require.Nil(t, r.Error)
		var rc struct {
			TransactionHash string            `json:"transactionHash"`
			Logs            []json.RawMessage `json:"logs"`
		}
		require.NoError(t, json.Unmarshal(r.Result, &rc))
		require.Equal(t, data[i%60].Transactions[0].Hash, rc.TransactionHash)
		require.Len(t, rc.Logs, 1)
	}
	require.Zero(t, counted.byHash.Load(), "no look-up one hash at a time")
	require.Zero(t, counted.txLogs.Load(), "no logs one receipt at a time")

	// Read ahead for receipts alone, the transactions hold only what a
	// receipt uses: another call by one of the hashes reads its own.
	h0, h1 := data[0].Transactions[0].Hash, data[1].Transactions[0].Hash
	single := a.rpc(t, "ots_getTransactionError", h0)
	require.Nil(t, single.Error)
	counted.byHash.Store(0)
	code, body = a.rpcPost(t, testChain, fmt.Sprintf(`[{"jsonrpc":"2.0","id":0,"method":"eth_getTransactionReceipt","params":["%s"]},`+
		`{"jsonrpc":"2.0","id":1,"method":"eth_getTransactionReceipt","params":["%s"]},`+
		`{"jsonrpc":"2.0","id":2,"method":"ots_getTransactionError","params":["%s"]}]`, h0, h1, h0))
	require.Equal(t, http.StatusOK, code)
	require.NoError(t, json.Unmarshal(body, &batch))
	require.Len(t, batch, 3)
	require.JSONEq(t, string(single.Result), string(batch[2].Result))
	require.Equal(t, int64(1), counted.byHash.Load(), "the ots_ call looked its transaction up itself")
}
