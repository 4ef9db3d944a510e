package api

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/config"
)

// searchModel is the search walk done by hand over the written blocks:
// block by block from the start, whole blocks, stopping at the first
// block met with the page full; newest block first in the answer, a
// block's transactions newest first (before) or in order (after).
func searchModel(data []*chaindata.BlockData, addr string, number uint64, size int, before bool) (hashes []string, first, last bool) {
	best := uint64(len(data) - 1)
	mentions := func(h uint64) []string {
		var out []string
		for _, tx := range data[h].Transactions {
			if tx.From == addr || tx.To == addr || tx.ContractAddress == addr {
				out = append(out, tx.Hash)
			}
		}
		return out
	}
	var blocks [][]string
	count := 0
	if before {
		from := best
		if number != 0 {
			from = number - 1
		}
		first, last = from >= best, false
		for n := int64(from); n >= 1; n-- {
			if count >= size {
				break
			}
			ms := mentions(uint64(n))
			for i, j := 0, len(ms)-1; i < j; i, j = i+1, j-1 {
				ms[i], ms[j] = ms[j], ms[i]
			}
			blocks, count = append(blocks, ms), count+len(ms)
			if n == 1 {
				last = true
			}
		}
	} else {
		from := uint64(1)
		if number != 0 {
			from = number + 1
		}
		first, last = from >= best, from == 1
		for n := from; n <= best; n++ {
			if count >= size {
				break
			}
			ms := mentions(n)
			blocks, count = append(blocks, ms), count+len(ms)
			if n == best {
				first = true
			}
		}
		for i, j := 0, len(blocks)-1; i < j; i, j = i+1, j-1 {
			blocks[i], blocks[j] = blocks[j], blocks[i]
		}
	}
	for _, b := range blocks {
		hashes = append(hashes, b...)
	}
	return hashes, first, last
}

// The address searches read the look-ups a page at a time (256
// positions); a chain where the address has far more, and one block with
// more than a page by itself, must still give whole blocks in order.
func TestOtsSearchesPageThroughTheLookups(t *testing.T) {
	a := newTestAPI(t, config.API{})
	data := sampleChain(400) // addrA sends 1-2 transactions in each block
	// Block 200 alone holds 300 more transactions of addrA.
	for i := range 300 {
		tx := data[200].Transactions[0]
		tx.Index, tx.Hash, tx.Nonce = uint32(2+i), fmt.Sprintf("0x%064x", 0xf0000+i), uint64(1_000_000+i)
		data[200].Transactions = append(data[200].Transactions, tx)
	}
	data[200].Logs = nil
	data[200].Transactions[0].LogCount = 0
	data[200].Block.TxCount, data[200].Block.LogCount = uint32(len(data[200].Transactions)), 0
	a.write(t, data)

	type page struct {
		Txs       []map[string]any `json:"txs"`
		Receipts  []map[string]any `json:"receipts"`
		FirstPage bool             `json:"firstPage"`
		LastPage  bool             `json:"lastPage"`
	}
	for _, c := range []struct {
		number uint64
		size   int
	}{{0, 25}, {0, 100}, {0, 1}, {205, 10}, {201, 10}, {199, 10}, {150, 100}, {3, 5}, {1, 5}, {399, 2}, {400, 2}} {
		for _, before := range []bool{true, false} {
			method := "ots_searchTransactionsAfter"
			if before {
				method = "ots_searchTransactionsBefore"
			}
			raw := a.rpc(t, method, addrA, c.number, c.size)
			require.Nil(t, raw.Error, "%s %+v: %+v", method, c, raw.Error)
			var got page
			require.NoError(t, json.Unmarshal(raw.Result, &got))
			want, first, last := searchModel(data, addrA, c.number, c.size, before)
			hashes := []string{}
			for i, tx := range got.Txs {
				hashes = append(hashes, tx["hash"].(string))
				require.Equal(t, tx["hash"], got.Receipts[i]["transactionHash"])
				require.NotEmpty(t, got.Receipts[i]["timestamp"])
			}
			if want == nil {
				want = []string{}
			}
			require.Equal(t, want, hashes, "%s %+v", method, c)
			require.Equal(t, []bool{first, last}, []bool{got.FirstPage, got.LastPage}, "%s %+v: firstPage, lastPage", method, c)
		}
	}
	// A sender's nonce, and a contract's creator, from the same look-ups.
	require.Equal(t, data[300].Transactions[1].Hash, a.rpcOK(t, "ots_getTransactionBySenderAndNonce", addrA, 601))
	require.Equal(t, data[200].Transactions[150].Hash, a.rpcOK(t, "ots_getTransactionBySenderAndNonce", addrA, fmt.Sprintf("0x%x", 1_000_148)))
	require.Nil(t, a.rpcOK(t, "ots_getTransactionBySenderAndNonce", addrB, 0))
	require.Equal(t, map[string]any{"hash": data[300].Transactions[1].Hash, "creator": addrA}, a.rpcOK(t, "ots_getContractCreator", contractOf(300)))
	require.Nil(t, a.rpcOK(t, "ots_getContractCreator", addrB))

	// Etherscan's getcontractcreation, from the same look-ups.
	status, _, res := a.es(t, "", url.Values{"module": {"contract"}, "action": {"getcontractcreation"},
		"contractaddresses": {contractOf(300) + "," + addrB + "," + contractOf(4)}})
	require.Equal(t, "1", status)
	var created []map[string]string
	require.NoError(t, json.Unmarshal(res, &created))
	require.Equal(t, []map[string]string{
		{"contractAddress": contractOf(300), "contractCreator": addrA, "txHash": data[300].Transactions[1].Hash, "blockNumber": "300",
			"timestamp": fmt.Sprint(t0 + 12*300), "contractFactory": "", "creationBytecode": "0x6080604052"},
		{"contractAddress": contractOf(4), "contractCreator": addrA, "txHash": data[4].Transactions[1].Hash, "blockNumber": "4",
			"timestamp": fmt.Sprint(t0 + 12*4), "contractFactory": "", "creationBytecode": "0x6080604052"},
	}, created)
	status, _, res = a.es(t, "", url.Values{"module": {"contract"}, "action": {"getcontractcreation"}, "contractaddresses": {addrB}})
	require.Equal(t, []string{"0", `"No data found"`}, []string{status, string(res)})
	status, _, _ = a.es(t, "", url.Values{"module": {"contract"}, "action": {"getcontractcreation"},
		"contractaddresses": {strings.Repeat(addrB+",", 5) + addrB}})
	require.Equal(t, "0", status, "more than 5")
}
