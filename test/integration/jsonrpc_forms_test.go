package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	gethrpc "github.com/ethereum/go-ethereum/rpc"
	"github.com/stretchr/testify/require"
)

// sameOutcome requires the node's outcome of a call: its answer, JSON for
// JSON, or, where the node refuses the call, an error of the same code
// (the wording is the API's own when it checks the parameter itself).
// canon, when given, is the same call in a form every node takes (the
// block as hex): the API may answer a form the node refuses (a JSON
// number where anvil wants a string), but only with the node's answer to
// canon.
func (p *rpcPair) sameOutcome(canon []any, method string, args ...any) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var want, got json.RawMessage
	werr := p.node.CallContext(ctx, &want, method, args...)
	gerr := p.ours.CallContext(ctx, &got, method, args...)
	p.calls++
	if werr != nil && gerr == nil && canon != nil {
		require.NoError(p.t, p.node.CallContext(ctx, &want, method, canon...), "node: %s %s", method, argsJSON(canon))
		require.JSONEq(p.t, string(want), string(got), "%s %s: the API answers as the node does to %s", method, argsJSON(args), argsJSON(canon))
		p.lenient++
		return
	}
	if werr != nil {
		require.Error(p.t, gerr, "the node refuses %s %s (%v); the API answered %.200s", method, argsJSON(args), werr, got)
		var wantCode, gotCode gethrpc.Error
		require.ErrorAs(p.t, werr, &wantCode)
		require.ErrorAs(p.t, gerr, &gotCode)
		require.Equal(p.t, wantCode.ErrorCode(), gotCode.ErrorCode(), "%s %s: node %q, API %q", method, argsJSON(args), werr, gerr)
		return
	}
	require.NoError(p.t, gerr, "the node answers %s %s", method, argsJSON(args))
	require.JSONEq(p.t, string(want), string(got), "%s %s", method, argsJSON(args))
}

func argsJSON(args []any) string {
	b, _ := json.Marshal(args)
	return string(b)
}

// checkParamForms asks every method that takes a block each form of it
// (hex, a JSON number, a tag, EIP-1898's objects with and without
// requireCanonical, a bare hash, a hash no block has) and each index as
// hex and as a JSON number, and requires the node's outcome of each: the
// methods the index answers and the ones it forwards alike.
func checkParamForms(p *rpcPair, head uint64, account string) {
	p.t.Helper()
	calls, lenient := p.calls, p.lenient
	h := head / 2
	hex := fmt.Sprintf("0x%x", h)
	var b struct {
		Hash string `json:"hash"`
	}
	require.NoError(p.t, json.Unmarshal(p.same("eth_getBlockByNumber", hex, false), &b))
	unknown := "0x" + fmt.Sprintf("%064x", 424242)
	// Each form, and the same block as hex (nil: no other form).
	forms := []struct{ at, hex any }{
		{hex, nil}, {h, hex}, {"earliest", nil}, {"0x0", nil}, {0, "0x0"},
		{map[string]any{"blockNumber": hex}, hex},
		{map[string]any{"blockHash": b.Hash}, hex},
		{map[string]any{"blockHash": b.Hash, "requireCanonical": true}, hex},
		{map[string]any{"blockHash": b.Hash, "requireCanonical": false}, hex},
		{map[string]any{"blockHash": unknown}, nil},
		{b.Hash, hex},
	}
	call := map[string]any{"data": "0x600160005260206000f3"}
	with := func(args []any, i int, v any) []any {
		if v == nil {
			return nil
		}
		out := slices.Clone(args)
		out[i] = v
		return out
	}
	for _, f := range forms {
		ask := func(method string, i int, args ...any) {
			p.sameOutcome(with(args, i, f.hex), method, args...)
		}
		ask("eth_getBlockByNumber", 0, f.at, false)
		ask("eth_getBlockTransactionCountByNumber", 0, f.at)
		ask("eth_getUncleCountByBlockNumber", 0, f.at)
		ask("eth_getBlockReceipts", 0, f.at)
		ask("eth_getTransactionByBlockNumberAndIndex", 0, f.at, "0x0")
		ask("eth_getBalance", 1, account, f.at)
		ask("eth_getCode", 1, account, f.at)
		ask("eth_getTransactionCount", 1, account, f.at)
		ask("eth_getStorageAt", 2, account, "0x0", f.at)
		ask("eth_call", 1, call, f.at)
		p.sameOutcome(nil, "eth_getLogs", map[string]any{"fromBlock": f.at, "toBlock": f.at})
	}
	// An index as a JSON number: anvil takes it, geth refuses it.
	p.sameOutcome([]any{hex, "0x0"}, "eth_getTransactionByBlockNumberAndIndex", hex, 0)
	p.sameOutcome([]any{b.Hash, "0x0"}, "eth_getTransactionByBlockHashAndIndex", b.Hash, 0)
	p.sameOutcome(nil, "eth_getBlockByHash", b.Hash, true)
	p.sameOutcome(nil, "eth_getBlockByHash", map[string]any{"blockHash": b.Hash}, false)
	p.sameOutcome(nil, "eth_feeHistory", 2, hex, []float64{50})
	p.sameOutcome(nil, "eth_feeHistory", "0x2", h, []float64{50})
	p.sameOutcome([]any{map[string]any{"fromBlock": "0x0", "toBlock": hex}}, "eth_getLogs", map[string]any{"fromBlock": 0, "toBlock": h})
	p.sameOutcome(nil, "eth_getLogs", map[string]any{"fromBlock": "earliest", "toBlock": hex})
	p.t.Logf("parameter forms: %d calls with the node's outcome, %d of them forms the node refuses and the API answers as the node answers the hex form",
		p.calls-calls, p.lenient-lenient)
}
