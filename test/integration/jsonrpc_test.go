package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sort"
	"testing"
	"time"

	gethrpc "github.com/ethereum/go-ethereum/rpc"
	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/internal/testkit"
	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/config"
)

// withNodeChainID is cfg with every chain's expected_chain_id set to what
// the node answers, for an API that answers eth_chainId (the worker runs
// with cfg as it was).
func withNodeChainID(t *testing.T, cfg *config.Config, nodeURL string) *config.Config {
	t.Helper()
	var id string
	require.NoError(t, nodeClient(t, nodeURL).CallContext(context.Background(), &id, "eth_chainId"))
	var n uint64
	_, err := fmt.Sscanf(id, "0x%x", &n)
	require.NoError(t, err)
	out := *cfg
	out.Chains = maps.Clone(cfg.Chains)
	for k, ch := range out.Chains {
		ch.ExpectedChainID = n
		out.Chains[k] = ch
	}
	return &out
}

// rpcPair asks the node and the API's JSON-RPC route the same calls.
type rpcPair struct {
	t          *testing.T
	nodeURL    string
	node, ours *gethrpc.Client
	calls      int
	// otherFrames counts the creations and self-destructs the API's call
	// trees have beyond anvil's (sameCalls).
	otherFrames int
	// lenient counts the calls the API answers in a form the node refuses
	// (sameOutcome).
	lenient int
}

func newRPCPair(t *testing.T, nodeURL, api, chainID string) *rpcPair {
	t.Helper()
	ours, err := gethrpc.DialHTTP(api + "/v1/chains/" + chainID + "/rpc")
	require.NoError(t, err)
	t.Cleanup(ours.Close)
	return &rpcPair{t: t, nodeURL: nodeURL, node: nodeClient(t, nodeURL), ours: ours}
}

// same requires the API's answer to be the node's, JSON for JSON.
func (p *rpcPair) same(method string, args ...any) json.RawMessage {
	p.t.Helper()
	want, got := p.answers(method, args...)
	require.JSONEq(p.t, string(want), string(got), "%s %v", method, args)
	p.calls++
	return want
}

// sameAtHead is same for an answer that follows the node's head (latest,
// safe, finalized): compared only when the node's head is still head
// after both answers, since a dev node that mines on a timer can move on
// between the node's answer and the API's, which then names a height not
// indexed yet.
func (p *rpcPair) sameAtHead(head uint64, method string, args ...any) {
	p.t.Helper()
	want, got := p.answers(method, args...)
	if now := nodeHead(p.t, p.nodeURL); now != head {
		p.t.Logf("%s %v not compared: the node moved from %d to %d meanwhile", method, args, head, now)
		return
	}
	require.JSONEq(p.t, string(want), string(got), "%s %v", method, args)
	p.calls++
}

// answers asks the node, then the API.
func (p *rpcPair) answers(method string, args ...any) (want, got json.RawMessage) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(p.t, p.node.CallContext(ctx, &want, method, args...), "node: %s %v", method, args)
	require.NoError(p.t, p.ours.CallContext(ctx, &got, method, args...), "api: %s %v", method, args)
	return want, got
}

// sameError requires the API to fail the call as the node does: the
// node's error code, message and data, passed on.
func (p *rpcPair) sameError(method string, args ...any) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out json.RawMessage
	want := p.node.CallContext(ctx, &out, method, args...)
	got := p.ours.CallContext(ctx, &out, method, args...)
	require.Error(p.t, want, "node: %s %v", method, args)
	require.Error(p.t, got, "api: %s %v", method, args)
	var wantCode, gotCode gethrpc.Error
	require.ErrorAs(p.t, want, &wantCode)
	require.ErrorAs(p.t, got, &gotCode)
	require.Equal(p.t, wantCode.ErrorCode(), gotCode.ErrorCode(), "%s %v", method, args)
	require.Equal(p.t, want.Error(), got.Error(), "%s %v", method, args)
	var wantData, gotData gethrpc.DataError
	if errors.As(want, &wantData) {
		require.ErrorAs(p.t, got, &gotData, "%s %v: the node's error data", method, args)
		require.Equal(p.t, wantData.ErrorData(), gotData.ErrorData(), "%s %v", method, args)
	}
	p.calls++
}

// revertingInit is creation code that reverts with one word, 0x…c0ffee:
// eth_call of it is a revert with data.
const revertingInit = "0x7f0000000000000000000000000000000000000000000000000000000000c0ffee60005260206000fd"

// checkState compares the state methods, which the API passes to the
// node, at the head: every account the chain touched, a call that
// reverts (the node's error and data passed on), fees, and a parameter
// the node refuses.
func checkState(p *rpcPair, accounts map[string]bool, head uint64) {
	p.t.Helper()
	at := fmt.Sprintf("0x%x", head)
	delete(accounts, "")
	for a := range accounts {
		p.same("eth_getBalance", a, at)
		p.same("eth_getCode", a, at)
		p.same("eth_getTransactionCount", a, at)
		p.same("eth_getStorageAt", a, "0x0", at)
	}
	// Creation code that returns one word: 1.
	p.same("eth_call", map[string]any{"data": "0x600160005260206000f3"}, at)
	p.same("eth_estimateGas", map[string]any{"data": "0x600160005260206000f3"}, at)
	p.same("eth_feeHistory", "0x2", at, []float64{50})
	p.sameError("eth_call", map[string]any{"data": revertingInit}, at)
	p.sameError("eth_getBalance", "0x12", at)
	require.NotEmpty(p.t, accounts)
}

// checkJSONRPC compares every history method of the JSON-RPC route with
// the node for heights 0..head: blocks by number and hash (with hashes
// and with whole transactions), their counts, every transaction by hash
// and by position, every receipt alone and by block, and eth_getLogs
// over the whole range and by address, topics and block hash. latest
// is compared when the node's head is still head (a dev node that mines
// on a timer has moved on). It returns how many logs the range holds.
func checkJSONRPC(t *testing.T, nodeURL, api, chainID string, head uint64) int {
	t.Helper()
	p := newRPCPair(t, nodeURL, api, chainID)
	p.same("eth_chainId")
	p.same("net_version")
	if nodeHead(t, nodeURL) == head {
		p.sameAtHead(head, "eth_blockNumber")
		p.sameAtHead(head, "eth_getBlockByNumber", "latest", false)
		// Tags only the node knows: it says which height, the index
		// answers with the block.
		p.sameAtHead(head, "eth_getBlockByNumber", "finalized", false)
		p.sameAtHead(head, "eth_getBlockByNumber", "safe", true)
	}
	txs := 0
	var withLogs string
	accounts := map[string]bool{}
	for h := uint64(0); h <= head; h++ {
		n := fmt.Sprintf("0x%x", h)
		var b struct {
			Hash         string            `json:"hash"`
			Transactions []json.RawMessage `json:"transactions"`
		}
		require.NoError(t, json.Unmarshal(p.same("eth_getBlockByNumber", n, true), &b))
		p.same("eth_getBlockByNumber", n, false)
		p.same("eth_getBlockByHash", b.Hash, true)
		p.same("eth_getBlockByHash", b.Hash, false)
		p.same("eth_getBlockTransactionCountByNumber", n)
		p.same("eth_getBlockTransactionCountByHash", b.Hash)
		p.same("eth_getUncleCountByBlockNumber", n)
		p.same("eth_getUncleCountByBlockHash", b.Hash)
		p.same("eth_getBlockReceipts", n)
		for i, raw := range b.Transactions {
			var tx struct {
				Hash string `json:"hash"`
				From string `json:"from"`
				To   string `json:"to"`
			}
			require.NoError(t, json.Unmarshal(raw, &tx))
			accounts[tx.From], accounts[tx.To] = true, true
			p.same("eth_getTransactionByHash", tx.Hash)
			var r struct {
				Logs            []json.RawMessage `json:"logs"`
				ContractAddress string            `json:"contractAddress"`
			}
			require.NoError(t, json.Unmarshal(p.same("eth_getTransactionReceipt", tx.Hash), &r))
			accounts[r.ContractAddress] = true
			if len(r.Logs) > 0 {
				withLogs = b.Hash
			}
			p.same("eth_getTransactionByBlockNumberAndIndex", n, fmt.Sprintf("0x%x", i))
			p.same("eth_getTransactionByBlockHashAndIndex", b.Hash, fmt.Sprintf("0x%x", i))
			txs++
		}
		p.same("eth_getTransactionByBlockNumberAndIndex", n, fmt.Sprintf("0x%x", len(b.Transactions)))
	}
	checkState(p, accounts, head)
	checkParamForms(p, head, sortedKeys(accounts)[0])
	p.same("eth_getTransactionByHash", "0x"+fmt.Sprintf("%064x", 12345))
	p.same("eth_getBlockByHash", "0x"+fmt.Sprintf("%064x", 12345), false)

	// Logs: the whole range, then by every address and topic seen.
	all := fmt.Sprintf("0x%x", head)
	var logs []struct {
		Address string   `json:"address"`
		Topics  []string `json:"topics"`
	}
	require.NoError(t, json.Unmarshal(p.same("eth_getLogs", map[string]any{"fromBlock": "0x0", "toBlock": all}), &logs))
	if len(logs) == 0 {
		t.Logf("%s: %d calls equal to the node's: %d heights, %d transactions, no logs", chainID, p.calls, head+1, txs)
		return 0
	}
	addresses, topics := map[string]bool{}, map[int]map[string]bool{}
	for _, l := range logs {
		addresses[l.Address] = true
		for i, tp := range l.Topics {
			if topics[i] == nil {
				topics[i] = map[string]bool{}
			}
			topics[i][tp] = true
		}
	}
	filters := 0
	for a := range addresses {
		p.same("eth_getLogs", map[string]any{"fromBlock": "0x0", "toBlock": all, "address": a})
		filters++
	}
	p.same("eth_getLogs", map[string]any{"fromBlock": "0x0", "toBlock": all, "address": sortedKeys(addresses)})
	for i, set := range topics {
		for tp := range set {
			pos := make([]any, i+1)
			pos[i] = tp
			p.same("eth_getLogs", map[string]any{"fromBlock": "0x0", "toBlock": all, "topics": pos})
			filters++
		}
		pos := make([]any, i+1)
		pos[i] = sortedKeys(set)
		p.same("eth_getLogs", map[string]any{"fromBlock": "0x0", "toBlock": all, "topics": pos})
	}
	p.same("eth_getLogs", map[string]any{"blockHash": withLogs})
	t.Logf("%s: %d calls equal to the node's: %d heights, %d transactions, %d logs, %d log filters",
		chainID, p.calls, head+1, txs, len(logs), filters+2+len(topics))
	return len(logs)
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// checkOts compares Otterscan's namespace with anvil's own for every
// block and transaction of heights 0..head: the block pages, the call
// trees, the internal operations, the revert outputs, and code checks of
// every account (a chain indexed with traces).
func checkOts(t *testing.T, nodeURL, api, chainID string, head uint64) {
	t.Helper()
	p := newRPCPair(t, nodeURL, api, chainID)
	p.same("ots_getApiLevel")
	accounts, created := map[string]bool{}, map[string]bool{}
	txs := 0
	var hashes []string
	for h := uint64(0); h <= head; h++ {
		var d struct {
			Block struct {
				Hash             string `json:"hash"`
				TransactionCount int    `json:"transactionCount"`
			} `json:"block"`
		}
		require.NoError(t, json.Unmarshal(p.same("ots_getBlockDetails", h), &d))
		p.same("ots_getBlockDetailsByHash", d.Block.Hash)
		p.same("erigon_getHeaderByNumber", h)
		p.same("ots_getBlockTransactions", h, 0, 25)
		if d.Block.TransactionCount > 1 {
			p.samePage(h, d.Block.TransactionCount)
		}
		var b struct {
			Transactions []struct {
				Hash  string `json:"hash"`
				From  string `json:"from"`
				To    string `json:"to"`
				Nonce string `json:"nonce"`
			} `json:"transactions"`
		}
		require.NoError(t, json.Unmarshal(p.same("eth_getBlockByNumber", fmt.Sprintf("0x%x", h), true), &b))
		for _, tx := range b.Transactions {
			p.sameCalls(tx.Hash)
			var ops []struct {
				Type int    `json:"type"`
				To   string `json:"to"`
			}
			require.NoError(t, json.Unmarshal(p.same("ots_getInternalOperations", tx.Hash), &ops))
			for _, op := range ops {
				if op.Type == 2 || op.Type == 3 { // CREATE, CREATE2
					created[op.To] = true
				}
			}
			p.same("ots_getTransactionError", tx.Hash)
			hashes = append(hashes, tx.Hash)
			accounts[tx.From], accounts[tx.To] = true, true
			p.same("ots_getTransactionBySenderAndNonce", tx.From, tx.Nonce)
			txs++
		}
	}
	delete(accounts, "")
	for a := range accounts {
		p.same("ots_hasCode", a, fmt.Sprintf("0x%x", head))
		p.same("ots_hasCode", a, head) // a JSON number, as Otterscan sends it
		p.same("ots_getTransactionBySenderAndNonce", a, 1000)
		p.same("ots_getContractCreator", a)
		for _, size := range []int{25, 2, 1} {
			p.same("ots_searchTransactionsBefore", a, 0, size)
			p.same("ots_searchTransactionsAfter", a, 0, size)
		}
		for h := uint64(1); h <= head+1; h++ {
			p.same("ots_searchTransactionsBefore", a, h, 2)
			p.same("ots_searchTransactionsAfter", a, h, 2)
		}
	}
	require.NotEmpty(t, created, "the traffic creates contracts")
	for c := range created {
		p.same("ots_getContractCreator", c)
	}
	require.Positive(t, p.otherFrames, "the traffic creates and destroys contracts")
	t.Logf("%s: %d ots_ calls equal to anvil's: %d heights, %d transactions (%d creations and self-destructs in the call trees beyond anvil's)",
		chainID, p.calls, head+1, txs, p.otherFrames)
	p.sameAddressPage(head, sortedKeys(accounts), hashes, sortedKeys(created))
}

// sameAddressPage sends the batch Otterscan's address page sends (its
// shape as recorded from Otterscan 2: 36 calls, block numbers as JSON
// numbers, 19 badges by ots_hasCode, 9 transactions' internal operations,
// 4 token calls) to the node and to the API, and requires every answer,
// error or result, to be the node's. The times of both are logged.
func (p *rpcPair) sameAddressPage(head uint64, accounts, txs, contracts []string) {
	t := p.t
	t.Helper()
	require.NotEmpty(t, accounts)
	require.NotEmpty(t, txs)
	require.NotEmpty(t, contracts)
	page, at := accounts[0], fmt.Sprintf("0x%x", head)
	type call struct {
		method string
		args   []any
	}
	calls := []call{
		{"ots_searchTransactionsBefore", []any{page, 0, 25}},
		{"ots_getContractCreator", []any{page}},
		{"eth_getBalance", []any{page, at}},
		{"eth_getTransactionCount", []any{page, at}},
	}
	for i := range 19 {
		calls = append(calls, call{"ots_hasCode", []any{accounts[i%len(accounts)], head}})
	}
	for i := range 9 {
		calls = append(calls, call{"ots_getInternalOperations", []any{txs[i%len(txs)]}})
	}
	for _, selector := range []string{"0x06fdde03", "0x95d89b41", "0x313ce567", "0x18160ddd"} { // name, symbol, decimals, totalSupply
		calls = append(calls, call{"eth_call", []any{map[string]string{"to": contracts[0], "data": selector}, at}})
	}
	require.Len(t, calls, 36)
	send := func(c *gethrpc.Client) ([]gethrpc.BatchElem, time.Duration) {
		batch := make([]gethrpc.BatchElem, len(calls))
		for i, c := range calls {
			batch[i] = gethrpc.BatchElem{Method: c.method, Args: c.args, Result: new(json.RawMessage)}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		start := time.Now()
		require.NoError(t, c.BatchCallContext(ctx, batch))
		return batch, time.Since(start)
	}
	want, nodeTook := send(p.node)
	got, took := send(p.ours)
	for i := range calls {
		if want[i].Error != nil {
			require.Error(t, got[i].Error, "%s %v", calls[i].method, calls[i].args)
			require.Equal(t, want[i].Error.Error(), got[i].Error.Error(), "%s %v", calls[i].method, calls[i].args)
			continue
		}
		require.NoError(t, got[i].Error, "%s %v", calls[i].method, calls[i].args)
		require.JSONEq(t, string(*want[i].Result.(*json.RawMessage)), string(*got[i].Result.(*json.RawMessage)), "%s %v", calls[i].method, calls[i].args)
	}
	t.Logf("Otterscan's address page batch (%d calls) equal to anvil's: the API answered in %s, anvil in %s", len(calls), took, nodeTook)
}

// sameCalls compares ots_traceTransaction: anvil lists the call frames
// only, where Otterscan's spec (and Erigon) list creations and
// self-destructs too, as the API does; the API's calls must be anvil's.
func (p *rpcPair) sameCalls(hash string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var want, got []map[string]any
	require.NoError(p.t, p.node.CallContext(ctx, &want, "ots_traceTransaction", hash))
	require.NoError(p.t, p.ours.CallContext(ctx, &got, "ots_traceTransaction", hash))
	var calls []map[string]any
	others := 0
	for _, e := range got {
		switch e["type"] {
		case "CREATE", "CREATE2", "SELFDESTRUCT":
			others++
		default:
			calls = append(calls, e)
		}
	}
	if want == nil {
		want = []map[string]any{}
	}
	if calls == nil {
		calls = []map[string]any{}
	}
	require.Equal(p.t, want, calls, "ots_traceTransaction %s: the call frames", hash)
	p.otherFrames += others
	p.calls++
}

// samePage compares a second page of ots_getBlockTransactions: anvil
// counts the page's transactions in transactionCount, where Otterscan's
// spec (and Erigon, and the API) count the block's, which Otterscan pages
// by; all else must be anvil's.
func (p *rpcPair) samePage(h uint64, count int) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var want, got map[string]any
	require.NoError(p.t, p.node.CallContext(ctx, &want, "ots_getBlockTransactions", h, 1, 1))
	require.NoError(p.t, p.ours.CallContext(ctx, &got, "ots_getBlockTransactions", h, 1, 1))
	wantBlock, gotBlock := want["fullblock"].(map[string]any), got["fullblock"].(map[string]any)
	require.Equal(p.t, float64(1), wantBlock["transactionCount"], "anvil counts the page")
	require.Equal(p.t, float64(count), gotBlock["transactionCount"], "the block's count")
	wantBlock["transactionCount"] = gotBlock["transactionCount"]
	require.Equal(p.t, want, got, "ots_getBlockTransactions %d, page 1 of 1", h)
	p.calls++
}

// checkTraceMethods compares debug_traceBlockByNumber, ByHash and
// debug_traceTransaction with the callTracer, rebuilt from the stored
// frames, with the node's for every height with transactions: the same
// frames (decoded alike), and with exact, the same JSON (geth, whose
// callTracer form the API writes).
func checkTraceMethods(t *testing.T, nodeURL, api, chainID string, head uint64, exact bool) {
	t.Helper()
	p := newRPCPair(t, nodeURL, api, chainID)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	callTracer := map[string]any{"tracer": "callTracer"}
	both := func(method string, args ...any) (json.RawMessage, json.RawMessage) {
		var want, got json.RawMessage
		require.NoError(t, p.node.CallContext(ctx, &want, method, args...), "node: %s %v", method, args)
		require.NoError(t, p.ours.CallContext(ctx, &got, method, args...), "api: %s %v", method, args)
		if exact {
			require.JSONEq(t, string(want), string(got), "%s %v", method, args)
		}
		p.calls++
		return want, got
	}
	frames := 0
	for h := uint64(0); h <= head; h++ {
		var b struct {
			Hash         string   `json:"hash"`
			Transactions []string `json:"transactions"`
		}
		require.NoError(t, p.node.CallContext(ctx, &b, "eth_getBlockByNumber", fmt.Sprintf("0x%x", h), false))
		if len(b.Transactions) == 0 {
			continue
		}
		want, got := both("debug_traceBlockByNumber", fmt.Sprintf("0x%x", h), callTracer)
		wantFrames, err := testkit.TracesOf(config.TracesDebug, want, h, b.Hash, b.Transactions)
		require.NoError(t, err)
		gotFrames, err := testkit.TracesOf(config.TracesDebug, got, h, b.Hash, b.Transactions)
		require.NoError(t, err)
		require.Equal(t, wantFrames, gotFrames, "height %d", h)
		frames += len(gotFrames)
		_, byHash := both("debug_traceBlockByHash", b.Hash, callTracer)
		require.JSONEq(t, string(got), string(byHash))
		for i, tx := range b.Transactions {
			want, got := both("debug_traceTransaction", tx, callTracer)
			wrap := func(r json.RawMessage) []chaindata.Trace {
				fs, err := testkit.TracesOf(config.TracesDebug, json.RawMessage(`[{"txHash":"`+tx+`","result":`+string(r)+`}]`), h, b.Hash, []string{tx})
				require.NoError(t, err)
				for j := range fs {
					fs[j].TxIndex = uint32(i)
				}
				return fs
			}
			require.Equal(t, wrap(want), wrap(got), "%s", tx)
			want, got = both("debug_traceTransaction", tx, map[string]any{"tracer": "callTracer", "tracerConfig": map[string]any{"onlyTopCall": true}})
			require.Len(t, wrap(got), 1, "only the top call")
			require.Equal(t, wrap(want), wrap(got), "%s only the top call", tx)
		}
	}
	require.Positive(t, frames)
	t.Logf("%s: %d trace calls equal to the node's (%d frames)", chainID, p.calls, frames)
}

// checkParityTraces compares trace_block and trace_transaction, rebuilt
// from the stored frames, with the node's JSON for every height with
// transactions (a chain indexed from the node's trace_block).
func checkParityTraces(t *testing.T, nodeURL, api, chainID string, head uint64) {
	t.Helper()
	p := newRPCPair(t, nodeURL, api, chainID)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for h := uint64(0); h <= head; h++ {
		var b struct {
			Transactions []string `json:"transactions"`
		}
		require.NoError(t, p.node.CallContext(ctx, &b, "eth_getBlockByNumber", fmt.Sprintf("0x%x", h), false))
		if len(b.Transactions) == 0 {
			continue
		}
		p.same("trace_block", fmt.Sprintf("0x%x", h))
		for _, tx := range b.Transactions {
			p.same("trace_transaction", tx)
		}
	}
	t.Logf("%s: %d parity trace calls equal to the node's", chainID, p.calls)
}
