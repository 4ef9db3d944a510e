package api

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/config"
)

// An older geth tracer sends a SELFDESTRUCT frame as its type alone
// ({"type":"SELFDESTRUCT"}); pkg/rpc keeps it with no contract, no
// beneficiary and a value of 0. The JSON-RPC route answers it as the node
// sent it, never with an address of "" (which clients fail to parse) or a
// value it does not know.
func TestABareSelfDestructFrameIsServedAsTheNodeSentIt(t *testing.T) {
	a := newTestAPI(t, config.API{})
	blocks := sampleChain(2)
	d := blocks[1]
	d.Traced = true
	tx := d.Transactions[0]
	base := chaindata.Trace{BlockNumber: d.Block.Number, BlockHash: d.Block.Hash, TxIndex: tx.Index, TxHash: tx.Hash,
		Input: "0x", Output: "0x", Value: "0", Gas: 50_000, GasUsed: 21_000}
	root := base
	root.Type, root.From, root.To, root.Value, root.Subtraces = chaindata.TraceCall, addrA, addrB, tx.Value, 1
	bare := base
	bare.Index, bare.Address, bare.Type, bare.Gas, bare.GasUsed = 1, []uint32{0}, chaindata.TraceSelfDestruct, 0, 0
	d.Traces = []chaindata.Trace{root, bare}
	a.write(t, blocks)

	var tree struct {
		From  string            `json:"from"`
		Calls []json.RawMessage `json:"calls"`
	}
	raw, err := json.Marshal(a.rpcOK(t, "debug_traceTransaction", tx.Hash, map[string]any{"tracer": "callTracer"}))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &tree))
	require.Equal(t, addrA, tree.From)
	require.Len(t, tree.Calls, 1)
	require.JSONEq(t, `{"type":"SELFDESTRUCT"}`, string(tree.Calls[0]), "the type alone, as the tracer sent it")

	raw, err = json.Marshal(a.rpcOK(t, "trace_transaction", tx.Hash))
	require.NoError(t, err)
	var parity []struct {
		Type   string          `json:"type"`
		Action json.RawMessage `json:"action"`
	}
	require.NoError(t, json.Unmarshal(raw, &parity))
	require.Len(t, parity, 2)
	require.Equal(t, "suicide", parity[1].Type)
	require.JSONEq(t, `{"address":null,"refundAddress":null,"balance":null}`, string(parity[1].Action), "unknown is null")
}
