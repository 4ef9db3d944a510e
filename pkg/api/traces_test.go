package api

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/stream"
)

// relayOf is the contract the sample transfer at height h calls on to.
func relayOf(h uint64) string { return fmt.Sprintf("0x%040x", 0xd000+h) }

// tracedChain is sampleChain with call trees: the transfer A → B calls,
// from B, the relay of its height with value h+1 (listed by Etherscan)
// and makes a staticcall to addrA (not listed); the creation's frame
// (even heights) creates, with create2, a child of the created contract,
// reverted with it where the creation failed.
func tracedChain(n uint64) []*chaindata.BlockData {
	blocks := sampleChain(n)
	for _, d := range blocks {
		h := d.Block.Number
		d.Traced = true
		for _, tx := range d.Transactions {
			base := chaindata.Trace{BlockNumber: h, BlockHash: d.Block.Hash, TxIndex: tx.Index, TxHash: tx.Hash, Input: "0x", Output: "0x", Value: "0"}
			add := func(f chaindata.Trace) {
				t := base
				t.Index, t.Address, t.Type, t.From, t.To, t.Value = f.Index, f.Address, f.Type, f.From, f.To, f.Value
				t.Gas, t.GasUsed, t.Subtraces, t.Error, t.Reverted = 90_000-uint64(f.Index)*1000, 21_000, f.Subtraces, f.Error, f.Reverted
				if t.Value == "" {
					t.Value = "0"
				}
				d.Traces = append(d.Traces, t)
			}
			if tx.Index == 0 {
				add(chaindata.Trace{Type: chaindata.TraceCall, From: addrA, To: addrB, Value: tx.Value, Subtraces: 2})
				add(chaindata.Trace{Index: 1, Address: []uint32{0}, Type: chaindata.TraceCall, From: addrB, To: relayOf(h), Value: fmt.Sprint(h + 1)})
				add(chaindata.Trace{Index: 2, Address: []uint32{1}, Type: chaindata.TraceStaticCall, From: addrB, To: addrA})
				continue
			}
			failed := tx.Status == 0
			errText := ""
			if failed {
				errText = "execution reverted"
			}
			add(chaindata.Trace{Type: chaindata.TraceCreate, From: addrA, To: tx.ContractAddress, Subtraces: 1, Error: errText, Reverted: failed})
			add(chaindata.Trace{Index: 1, Address: []uint32{0}, Type: chaindata.TraceCreate2, From: tx.ContractAddress,
				To: fmt.Sprintf("0x%040x", 0xe000+h), Reverted: failed})
		}
	}
	return blocks
}

func TestTraceRoutes(t *testing.T) {
	a := newTestAPI(t, config.API{MaxPageSize: 4})
	blocks := tracedChain(10)
	a.write(t, blocks)
	a.write(t, sampleChain(12)[10:]) // 10 and 11 indexed without traces

	var tr TxTrace
	tx := blocks[6].Transactions[1]
	a.getJSON(t, "/v1/chains/c1/txs/"+tx.Hash+"/trace", http.StatusOK, &tr)
	require.Equal(t, tx.Hash, tr.TxHash)
	require.Equal(t, uint64(6), tr.BlockNumber)
	require.Len(t, tr.Frames, 2)
	require.Equal(t, stream.FrameOf(blocks[6].Traces[3]), tr.Frames[0])
	require.Equal(t, "create2", tr.Frames[1].Type)
	require.Equal(t, []uint32{0}, tr.Frames[1].TraceAddress)
	require.True(t, tr.Frames[1].Reverted, "its parent failed")
	require.Equal(t, "execution reverted", *tr.Frames[0].Error)

	untraced := sampleChain(12)[11].Transactions[0].Hash
	var e apiError
	a.getJSON(t, "/v1/chains/c1/txs/"+untraced+"/trace", http.StatusNotFound, &e)
	require.Contains(t, e.Message, "indexed without traces")
	a.server.chains.Store(&map[string]config.Chain{testChain: {Type: config.ChainTypeEthereum, Traces: config.Traces{Mode: config.TracesDebug}}})
	a.getJSON(t, "/v1/chains/c1/txs/"+untraced+"/trace", http.StatusServiceUnavailable, &e)
	require.Contains(t, e.Message, "backfill has not reached it")

	// B's internal transactions, newest first, four a page: the calls to
	// the relays; with all, the staticcalls too.
	var p page[stream.InternalTx]
	var seen []uint64
	next := "/v1/chains/c1/addresses/" + addrB + "/internal-txs"
	for next != "" {
		p = page[stream.InternalTx]{}
		a.getJSON(t, next, http.StatusOK, &p)
		for _, it := range p.Items {
			require.Equal(t, "call", it.Type)
			require.Equal(t, relayOf(it.BlockNumber), *it.To)
			require.Equal(t, fmt.Sprint(it.BlockNumber+1), it.Value)
			seen = append(seen, it.BlockNumber)
		}
		next = ""
		if p.NextCursor != nil {
			next = "/v1/chains/c1/addresses/" + addrB + "/internal-txs?cursor=" + url.QueryEscape(*p.NextCursor)
		}
	}
	require.Equal(t, []uint64{9, 8, 7, 6, 5, 4, 3, 2, 1, 0}, seen)
	a.getJSON(t, "/v1/chains/c1/addresses/"+addrB+"/internal-txs?all=true&from=8", http.StatusOK, &p)
	require.Len(t, p.Items, 4)
	require.Equal(t, []string{"staticcall", "call", "staticcall", "call"}, []string{p.Items[0].Type, p.Items[1].Type, p.Items[2].Type, p.Items[3].Type})
	a.getJSON(t, "/v1/chains/c1/addresses/"+contractOf(4)+"/internal-txs", http.StatusOK, &p)
	require.Len(t, p.Items, 1, "the contract created at 4, as the creator of its child")
	require.Equal(t, "create2", p.Items[0].Type)

	a.getJSON(t, "/v1/chains/c1/addresses/"+addrB+"/internal-txs?all=maybe", http.StatusBadRequest, &e)
	require.Equal(t, "all", e.Parameter)
	a.getJSON(t, "/v1/chains/c1/addresses/"+addrB+"/internal-txs?cursor=eyJrIjoiYmxvY2tzIiwiYiI6MX0", http.StatusBadRequest, &e)
	require.Equal(t, "cursor", e.Parameter)
}

var txlistInternalFormat = map[string]*regexp.Regexp{
	"blockNumber": decimal, "timeStamp": decimal, "hash": hashRE, "from": addrRE, "to": addrOrNo, "value": decimal,
	"contractAddress": addrOrNo, "input": regexp.MustCompile(`^$`), "type": regexp.MustCompile(`^[a-z2]+$`),
	"gas": decimal, "gasUsed": decimal, "traceId": regexp.MustCompile(`^[0-9]+(_[0-9]+)*$`),
	"isError": regexp.MustCompile(`^[01]$`), "errCode": anyText,
}

func TestEtherscanTxlistInternal(t *testing.T) {
	a := newTestAPI(t, config.API{})
	blocks := tracedChain(10)
	a.write(t, blocks)
	byAddress := recorded(t, "txlistinternal.json")["result"].([]any)[0].(map[string]any)
	byHash := recorded(t, "txlistinternal_txhash.json")["result"].([]any)[0].(map[string]any)

	code, v := a.etherscan(t, "module", "account", "action", "txlistinternal", "address", addrB, "sort", "desc", "offset", "3", "page", "2")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "1", v["status"])
	items := v["result"].([]any)
	require.Len(t, items, 3)
	for i, it := range items {
		m := it.(map[string]any)
		requireFormat(t, byAddress, m, txlistInternalFormat, nil)
		require.Equal(t, fmt.Sprint(6-i), m["blockNumber"], "newest first, the second page of three")
		require.Equal(t, "0", m["traceId"])
		require.Equal(t, fmt.Sprint(t0+12*(6-i)), m["timeStamp"])
	}

	// A creation: to empty, the contract in contractAddress; reverted with
	// its failed parent.
	_, v = a.etherscan(t, "module", "account", "action", "txlistinternal", "txhash", blocks[2].Transactions[1].Hash)
	items = v["result"].([]any)
	require.Len(t, items, 1)
	m := items[0].(map[string]any)
	requireFormat(t, byHash, m, txlistInternalFormat, nil)
	require.Equal(t, "", m["to"])
	require.Equal(t, fmt.Sprintf("0x%040x", 0xe000+2), m["contractAddress"])
	require.Equal(t, "create2", m["type"])
	require.Equal(t, "1", m["isError"])

	_, v = a.etherscan(t, "module", "account", "action", "txlistinternal", "startblock", "3", "endblock", "4")
	items = v["result"].([]any)
	require.Len(t, items, 3, "the relay calls of 3 and 4 and the creation at 4")
	require.Equal(t, "create2", items[2].(map[string]any)["type"])
	require.Equal(t, "0_2", esInternalTxOf(chaindata.Trace{Address: []uint32{0, 2}, Value: "0"}, 0, false).TraceID, "a trace address, joined by _")

	for _, kv := range [][]string{
		{"address", addrB, "txhash", blocks[2].Transactions[1].Hash},
		{"startblock", "3"},
		{"txhash", "0x12"},
		{"address", addrB, "sort", "up"},
	} {
		_, v = a.etherscan(t, append([]string{"module", "account", "action", "txlistinternal"}, kv...)...)
		require.Equal(t, "0", v["status"], "%v", kv)
		require.Equal(t, "NOTOK", v["message"], "%v", kv)
	}
	_, v = a.etherscan(t, "module", "account", "action", "txlistinternal", "address", addrRandom)
	require.Equal(t, "No transactions found", v["message"])
}

const addrRandom = "0x00000000000000000000000000000000000000f7"
