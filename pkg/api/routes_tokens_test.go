package api

import (
	"context"
	"fmt"
	"math/big"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/storage"
	"github.com/tideline-dev/tideline/pkg/stream"
	"github.com/tideline-dev/tideline/pkg/tokens"
)

// Tokens of the token chain.
var (
	tok20   = "0x00000000000000000000000000000000000020aa"
	tok721  = "0x00000000000000000000000000000000000721aa"
	tok1155 = "0x000000000000000000000000000000000001155a"
	zero    = tokens.ZeroAddress
)

func w256(v *big.Int) string { return fmt.Sprintf("%064x", v) }

// tokenChain is sampleChain(n) whose transfer transaction (index 0) also
// moves tokens: height 0 mints 10^24 of tok20 to A; every height sends
// (h+1)·10^18 of tok20 from A to B; heights divisible by 3 mint the
// tok721 id h to B; height 4 mints ids 1 and 2 of tok1155 (10 and 20) to
// A in a batch; height 5 holds a malformed Transfer.
func tokenChain(n uint64) []*chaindata.BlockData {
	blocks := sampleChain(n)
	e18 := big.NewInt(1e18)
	for _, d := range blocks {
		h := d.Block.Number
		tx := &d.Transactions[0]
		add := func(token string, topics []string, data string) {
			d.Logs = append(d.Logs, chaindata.Log{BlockNumber: h, BlockHash: d.Block.Hash, TxHash: tx.Hash, TxIndex: 0,
				LogIndex: uint32(len(d.Logs)), Address: token, Topics: topics, Data: data, Raw: []byte(`{"removed":false}`)})
		}
		if h == 0 {
			add(tok20, []string{tokens.TopicTransfer, padAddress(zero), padAddress(addrA)}, "0x"+w256(new(big.Int).Mul(e18, big.NewInt(1e6))))
		}
		add(tok20, []string{tokens.TopicTransfer, padAddress(addrA), padAddress(addrB)}, "0x"+w256(new(big.Int).Mul(e18, big.NewInt(int64(h)+1))))
		if h%3 == 0 {
			add(tok721, []string{tokens.TopicTransfer, padAddress(zero), padAddress(addrB), "0x" + w256(big.NewInt(int64(h)))}, "0x")
		}
		if h == 4 {
			add(tok1155, []string{tokens.TopicTransferBatch, padAddress(addrA), padAddress(zero), padAddress(addrA)},
				"0x"+w256(big.NewInt(64))+w256(big.NewInt(160))+w256(big.NewInt(2))+w256(big.NewInt(1))+w256(big.NewInt(2))+
					w256(big.NewInt(2))+w256(big.NewInt(10))+w256(big.NewInt(20)))
		}
		if h == 5 {
			add(tok20, []string{tokens.TopicTransfer, padAddress(addrA), padAddress(addrB)}, "0x")
		}
		tx.LogCount = uint32(len(d.Logs))
		d.Block.LogCount = uint32(len(d.Logs))
	}
	return blocks
}

func (a *testAPI) writeMetadata(t *testing.T, ms ...storage.TokenMetadata) {
	t.Helper()
	require.NoError(t, a.store.Tokens().WriteTokenMetadata(context.Background(), testChain, ms))
}

func tokenAPI(t *testing.T) *testAPI {
	a := newTestAPI(t, config.API{MaxPageSize: 50, MaxLogRange: 100, EtherscanMaxRecords: 100}, func(o *Options) {
		ch := o.Chains[testChain]
		ch.ExpectedChainID = 31337
		o.Chains[testChain] = ch
	})
	a.write(t, tokenChain(10))
	return a
}

func TestTokenRoutes(t *testing.T) {
	a := tokenAPI(t)

	// Metadata: pending until asked, then as answered.
	var info TokenInfo
	a.getJSON(t, "/v1/chains/c1/tokens/"+tok20, 200, &info)
	require.Equal(t, "pending", info.MetadataStatus)
	require.Equal(t, tokens.ERC20, *info.Standard)
	a.getJSON(t, "/v1/chains/c1/tokens/0x00000000000000000000000000000000000000ff", 404, nil)
	a.writeMetadata(t, storage.TokenMetadata{Token: tok20, Standard: tokens.ERC20, Name: "Twenty", Symbol: "TW",
		NameEncoding: tokens.EncodingString, Decimals: 18, HasDecimals: true, TotalSupply: "7", TotalSupplyHeight: 9,
		FetchedAt: time.Unix(t0, 0)})
	a.getJSON(t, "/v1/chains/c1/tokens/"+tok20, 200, &info)
	require.Equal(t, "fetched", info.MetadataStatus)
	require.Equal(t, "Twenty", *info.Name)
	require.Equal(t, uint8(18), *info.Decimals)

	// A token's transfers, newest first, two a page, to the end.
	var all []stream.TokenTransfer
	path := "/v1/chains/c1/tokens/" + tok20 + "/transfers?limit=2"
	for pages := 0; ; pages++ {
		var p tokenPage
		a.getJSON(t, path, 200, &p)
		all = append(all, p.Items...)
		require.Equal(t, "TW", *p.Tokens[tok20].Symbol)
		if p.NextCursor == nil {
			break
		}
		require.Less(t, pages, 10)
		path = "/v1/chains/c1/tokens/" + tok20 + "/transfers?limit=2&cursor=" + *p.NextCursor
	}
	require.Len(t, all, 11) // the mint and one transfer a height; the malformed log gave none
	require.Equal(t, uint64(9), all[0].BlockNumber)
	require.Equal(t, zero, all[10].From)
	require.Equal(t, "10000000000000000000", all[0].Amount)
	require.Nil(t, all[0].TokenID)

	// An address's transfers: B received tok20 every height and tok721
	// at 0, 3, 6, 9; filtered by standard and by token.
	var p tokenPage
	a.getJSON(t, "/v1/chains/c1/addresses/"+addrB+"/transfers?limit=50", 200, &p)
	require.Len(t, p.Items, 14)
	a.getJSON(t, "/v1/chains/c1/addresses/"+addrB+"/transfers?standard=erc721", 200, &p)
	require.Len(t, p.Items, 4)
	require.Equal(t, "9", *p.Items[0].TokenID)
	a.getJSON(t, "/v1/chains/c1/addresses/"+addrA+"/transfers?token="+tok1155+"&from=4&to=4", 200, &p)
	require.Len(t, p.Items, 2)
	require.Equal(t, []uint32{1, 0}, []uint32{p.Items[0].BatchIndex, p.Items[1].BatchIndex})

	// Balances: A has what was minted minus 55·10^18; B has 55·10^18 and
	// four deeds; the ERC-1155 ids apart.
	var holders Balances
	a.getJSON(t, "/v1/chains/c1/tokens/"+tok20+"/holders", 200, &holders)
	require.True(t, holders.Derived)
	require.Equal(t, uint64(9), holders.CountedTo)
	require.Equal(t, []string{addrA, addrB}, []string{holders.Items[0].Holder, holders.Items[1].Holder})
	require.Equal(t, "999945000000000000000000", holders.Items[0].Balance)
	require.Equal(t, "55000000000000000000", holders.Items[1].Balance)
	a.getJSON(t, "/v1/chains/c1/tokens/"+tok1155+"/holders?token_id=002", 200, &holders)
	require.Len(t, holders.Items, 1)
	require.Equal(t, "20", holders.Items[0].Balance)
	var mine Balances
	a.getJSON(t, "/v1/chains/c1/addresses/"+addrB+"/tokens", 200, &mine)
	got := map[string]string{}
	for _, h := range mine.Items {
		got[h.Token] = h.Balance
	}
	require.Equal(t, map[string]string{tok20: "55000000000000000000", tok721: "4"}, got)

	// Bad input: a clear 400 naming the parameter, never a 5xx.
	for _, path := range []string{
		"/v1/chains/c1/tokens/0x12/transfers",
		"/v1/chains/c1/tokens/" + tok20 + "/transfers?standard=erc99",
		"/v1/chains/c1/tokens/" + tok20 + "/transfers?from=5&to=2",
		"/v1/chains/c1/tokens/" + tok20 + "/transfers?cursor=abc",
		"/v1/chains/c1/tokens/" + tok20 + "/transfers?limit=0",
		"/v1/chains/c1/tokens/" + tok20 + "/transfers?token=" + tok20,
		"/v1/chains/c1/addresses/" + addrA + "/transfers?token=0xzz",
		"/v1/chains/c1/tokens/" + tok20 + "/holders?token_id=-1",
		"/v1/chains/c1/tokens/" + tok20 + "/holders?token_id=" + strings.Repeat("9", 79),
		"/v1/chains/c1/addresses/" + addrA + "/tokens?token=nope",
	} {
		a.getJSON(t, path, 400, nil)
	}
	// A cursor of another listing is refused.
	a.getJSON(t, "/v1/chains/c1/tokens/"+tok20+"/transfers?limit=1", 200, &p)
	a.getJSON(t, "/v1/chains/c1/addresses/"+addrA+"/transfers?cursor="+*p.NextCursor, 400, nil)
}

func TestEventsAndInputDecoded(t *testing.T) {
	a := tokenAPI(t)
	event := url.QueryEscape("Transfer(address indexed from,address indexed to,uint256 value)")
	var p page[DecodedLog]
	a.getJSON(t, "/v1/chains/c1/events?from=3&to=3&event="+event, 200, &p)
	// Height 3: the tok20 transfer decodes; the tok721 mint (4 topics) does not.
	require.Len(t, p.Items, 2)
	require.Equal(t, "value", p.Items[0].Decoded[2].Name)
	require.Equal(t, "4000000000000000000", p.Items[0].Decoded[2].Value)
	require.Equal(t, addrA, p.Items[0].Decoded[0].Value)
	require.Nil(t, p.Items[1].Decoded)
	require.Contains(t, *p.Items[1].Undecodable, "4 topics")
	// By address alone, the logs come undecoded; with a JSON fragment, decoded.
	a.getJSON(t, "/v1/chains/c1/events?from=0&to=9&address="+tok1155, 200, &p)
	require.Len(t, p.Items, 1)
	require.Nil(t, p.Items[0].Decoded)
	frag := url.QueryEscape(`{"type":"event","name":"TransferBatch","inputs":[{"name":"operator","type":"address","indexed":true},` +
		`{"name":"from","type":"address","indexed":true},{"name":"to","type":"address","indexed":true},` +
		`{"name":"ids","type":"uint256[]"},{"name":"values","type":"uint256[]"}]}`)
	a.getJSON(t, "/v1/chains/c1/events?from=0&to=9&address="+tok1155+"&event="+frag, 200, &p)
	require.Equal(t, []any{"10", "20"}, p.Items[0].Decoded[4].Value)

	for _, path := range []string{
		"/v1/chains/c1/events?from=0&to=9",
		"/v1/chains/c1/events?from=0&to=9&event=Transfer(",
		"/v1/chains/c1/events?from=0&to=500&event=" + event,
		"/v1/chains/c1/events?to=9&event=" + event,
		"/v1/chains/c1/events?from=0&to=9&event=" + url.QueryEscape("Note(uint256 x) anonymous"),
	} {
		a.getJSON(t, path, 400, nil)
	}

	var in DecodedInput
	tx := h32('a', 2*3)
	a.getJSON(t, "/v1/chains/c1/txs/"+tx+"/input?function="+url.QueryEscape("transfer(address to,uint256 amount)"), 200, &in)
	require.Equal(t, "0xa9059cbb", in.Selector)
	require.Nil(t, in.Decoded, "the stored input is cut short")
	require.NotNil(t, in.Undecodable)
	a.getJSON(t, "/v1/chains/c1/txs/"+tx+"/input", 400, nil)
	a.getJSON(t, "/v1/chains/c1/txs/"+tx+"/input?function=nope", 400, nil)
	a.getJSON(t, "/v1/chains/c1/txs/"+h32('a', 999)+"/input?function=f()", 404, nil)
}
