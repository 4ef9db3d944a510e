package api

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/rpc"
)

// es asks the Etherscan route (the per-chain one, or /v2/api when path
// is given) and decodes the envelope.
func (a *testAPI) es(t *testing.T, path string, params url.Values) (status, message string, result json.RawMessage) {
	t.Helper()
	if path == "" {
		path = "/v1/chains/c1/etherscan/api"
	}
	var env struct {
		Status  string          `json:"status"`
		Message string          `json:"message"`
		Result  json.RawMessage `json:"result"`
	}
	a.getJSON(t, path+"?"+params.Encode(), 200, &env)
	return env.Status, env.Message, env.Result
}

func vals(kv ...string) url.Values {
	v := url.Values{}
	for i := 0; i < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return v
}

func TestEtherscanTokenActions(t *testing.T) {
	a := tokenAPI(t)

	// tokentx of an address: ascending by default, Etherscan's fields.
	st, msg, res := a.es(t, "", vals("module", "account", "action", "tokentx", "address", addrB, "offset", "3", "page", "1"))
	require.Equal(t, "1", st, string(res))
	require.Equal(t, "OK", msg)
	var txs []map[string]string
	require.NoError(t, json.Unmarshal(res, &txs))
	require.Len(t, txs, 3)
	require.Equal(t, "0", txs[0]["blockNumber"])
	require.Equal(t, "1000000000000000000", txs[0]["value"])
	require.Equal(t, tok20, txs[0]["contractAddress"])
	require.Equal(t, "deprecated", txs[0]["input"])
	require.Equal(t, "", txs[0]["tokenDecimal"], "metadata not fetched yet")
	require.Equal(t, "10", txs[0]["confirmations"])
	require.Equal(t, "0xa9059cbb", txs[0]["methodId"])
	// By contract alone, newest first, page 2.
	_, _, res = a.es(t, "", vals("module", "account", "action", "tokentx", "contractaddress", tok20, "sort", "desc", "offset", "2", "page", "2"))
	require.NoError(t, json.Unmarshal(res, &txs))
	require.Equal(t, []string{"7", "6"}, []string{txs[0]["blockNumber"], txs[1]["blockNumber"]})
	// NFTs and multi-tokens.
	_, _, res = a.es(t, "", vals("module", "account", "action", "tokennfttx", "address", addrB, "sort", "desc"))
	require.NoError(t, json.Unmarshal(res, &txs))
	require.Len(t, txs, 4)
	require.Equal(t, "9", txs[0]["tokenID"])
	require.Equal(t, "0", txs[0]["tokenDecimal"])
	_, _, res = a.es(t, "", vals("module", "account", "action", "token1155tx", "address", addrA))
	require.NoError(t, json.Unmarshal(res, &txs))
	require.Equal(t, []string{"1", "10"}, []string{txs[0]["tokenID"], txs[0]["tokenValue"]})
	require.Equal(t, []string{"2", "20"}, []string{txs[1]["tokenID"], txs[1]["tokenValue"]})
	// Nothing found.
	st, msg, _ = a.es(t, "", vals("module", "account", "action", "token1155tx", "address", addrB))
	require.Equal(t, []string{"0", "No transactions found"}, []string{st, msg})

	// Balances and supply, derived.
	_, _, res = a.es(t, "", vals("module", "account", "action", "tokenbalance", "contractaddress", tok20, "address", addrB, "tag", "latest"))
	require.JSONEq(t, `"55000000000000000000"`, string(res))
	_, _, res = a.es(t, "", vals("module", "stats", "action", "tokensupply", "contractaddress", tok20))
	require.JSONEq(t, `"1000000000000000000000000"`, string(res))

	// Statuses: a success, a failure (height 2's creation), a hash not indexed.
	_, _, res = a.es(t, "", vals("module", "transaction", "action", "gettxreceiptstatus", "txhash", h32('a', 2*2+1)))
	require.JSONEq(t, `{"status":"0"}`, string(res))
	_, _, res = a.es(t, "", vals("module", "transaction", "action", "getstatus", "txhash", h32('a', 2*2+1)))
	require.JSONEq(t, `{"isError":"1","errDescription":"Reverted"}`, string(res))
	_, _, res = a.es(t, "", vals("module", "transaction", "action", "getstatus", "txhash", h32('a', 2*3)))
	require.JSONEq(t, `{"isError":"0","errDescription":""}`, string(res))
	_, _, res = a.es(t, "", vals("module", "transaction", "action", "gettxreceiptstatus", "txhash", h32('a', 777)))
	require.JSONEq(t, `{"status":""}`, string(res))

	// Proxy: a block's transaction count and a transaction by position.
	var rpc struct {
		Result json.RawMessage `json:"result"`
	}
	a.getJSON(t, "/v1/chains/c1/etherscan/api?module=proxy&action=eth_getBlockTransactionCountByNumber&tag=0x4", 200, &rpc)
	require.JSONEq(t, `"0x2"`, string(rpc.Result))
	a.getJSON(t, "/v1/chains/c1/etherscan/api?module=proxy&action=eth_getTransactionByBlockNumberAndIndex&tag=0x4&index=0x1", 200, &rpc)
	var tx map[string]any
	require.NoError(t, json.Unmarshal(rpc.Result, &tx))
	require.Equal(t, h32('a', 2*4+1), tx["hash"])
	a.getJSON(t, "/v1/chains/c1/etherscan/api?module=proxy&action=eth_getTransactionByBlockNumberAndIndex&tag=0x5&index=0x1", 200, &rpc)
	require.Equal(t, "null", string(rpc.Result))

	// Etherscan V2: the chain by chainid, the same answer; another chainid
	// is Etherscan's error, on either route.
	_, _, res = a.es(t, "/v2/api", vals("chainid", "31337", "module", "account", "action", "tokenbalance", "contractaddress", tok20, "address", addrB))
	require.JSONEq(t, `"55000000000000000000"`, string(res))
	for _, c := range []struct{ path, chainid string }{{"/v2/api", "1"}, {"/v2/api", ""}, {"/v2/api", "x"}, {"", "1"}} {
		st, _, res = a.es(t, c.path, vals("chainid", c.chainid, "module", "proxy", "action", "eth_blockNumber"))
		require.Equal(t, "0", st, c)
		require.Contains(t, string(res), "Missing or unsupported chainid parameter", c)
	}
	st, _, _ = a.es(t, "", vals("chainid", "31337", "module", "account", "action", "tokentx", "address", addrB))
	require.Equal(t, "1", st)

	// Bad input: status 0 and Etherscan's message, never a 5xx.
	for _, v := range []url.Values{
		vals("module", "account", "action", "tokentx"),
		vals("module", "account", "action", "tokentx", "address", "0x12"),
		vals("module", "account", "action", "tokennfttx", "contractaddress", "zz"),
		vals("module", "account", "action", "tokentx", "address", addrA, "sort", "up"),
		vals("module", "account", "action", "tokentx", "address", addrA, "startblock", "9", "endblock", "2"),
		vals("module", "account", "action", "tokentx", "address", addrA, "offset", "100000"),
		vals("module", "account", "action", "tokenbalance", "address", addrA),
		vals("module", "account", "action", "tokenbalance", "address", addrA, "contractaddress", tok20, "tag", "0x5"),
		vals("module", "stats", "action", "tokensupply"),
		vals("module", "stats", "action", "tokensupply", "contractaddress", addrA),
		vals("module", "transaction", "action", "getstatus", "txhash", "0x1"),
		vals("module", "transaction", "action", "nope"),
	} {
		st, msg, res := a.es(t, "", v)
		require.Equal(t, "0", st, v.Encode())
		require.Equal(t, "NOTOK", msg, v.Encode())
		require.Contains(t, string(res), "Error!", v.Encode())
	}
	var failure struct {
		Error struct{ Code int } `json:"error"`
	}
	a.getJSON(t, "/v1/chains/c1/etherscan/api?module=proxy&action=eth_getTransactionByBlockNumberAndIndex&tag=0x4&index=zz", 200, &failure)
	require.Equal(t, rpcInvalidParams, failure.Error.Code)
}

// Etherscan's actions on state go to the node under the JSON-RPC route's
// list, in Etherscan's forms: the account module's envelope with a
// decimal balance, the proxy module's JSON-RPC answers (the node's error
// object, a revert's data included, passed on).
func TestEtherscanStateActionsGoToTheNode(t *testing.T) {
	f := &fakeForward{params: map[string]string{}}
	a := newTestAPI(t, config.API{}, func(o *Options) { o.Forward = f.forward })
	a.write(t, sampleChain(3))
	const route = "/v1/chains/c1/etherscan/api"

	status, _, result := a.es(t, route, url.Values{"module": {"account"}, "action": {"balance"}, "address": {addrA}, "tag": {"latest"}})
	require.Equal(t, "1", status)
	require.Equal(t, `"16"`, string(result))
	require.JSONEq(t, `["`+addrA+`","latest"]`, f.params["eth_getBalance"])
	status, _, result = a.es(t, route, url.Values{"module": {"account"}, "action": {"balancemulti"}, "address": {addrA + "," + addrB}})
	require.Equal(t, "1", status)
	require.JSONEq(t, `[{"account":"`+addrA+`","balance":"16"},{"account":"`+addrB+`","balance":"16"}]`, string(result))
	status, _, _ = a.es(t, route, url.Values{"module": {"account"}, "action": {"balancemulti"}, "address": {strings.Repeat(addrA+",", 21) + addrA}})
	require.Equal(t, "0", status, "more than 20 addresses")

	// tokensupply is the contract's totalSupply() at the watermark.
	status, _, result = a.es(t, route, url.Values{"module": {"stats"}, "action": {"tokensupply"}, "contractaddress": {addrB}})
	require.Equal(t, "1", status)
	require.Equal(t, `"1000"`, string(result))
	require.JSONEq(t, `[{"to":"`+addrB+`","data":"0x18160ddd"},"0x2"]`, f.params["eth_call"])

	proxy := func(kv url.Values) rpcReply {
		t.Helper()
		kv.Set("module", "proxy")
		code, body := a.get(t, route+"?"+kv.Encode())
		require.Equal(t, http.StatusOK, code, "%s", body)
		var r rpcReply
		require.NoError(t, json.Unmarshal(body, &r), "%s", body)
		return r
	}
	r := proxy(url.Values{"action": {"eth_getCode"}, "address": {addrB}, "tag": {"0x2"}})
	require.Equal(t, `"0x6000"`, string(r.Result))
	require.JSONEq(t, `["`+addrB+`","0x2"]`, f.params["eth_getCode"])
	r = proxy(url.Values{"action": {"eth_estimateGas"}, "to": {addrB}, "data": {"0xa9059cbb"}, "gasLimit": {"0x10000"}})
	require.Equal(t, `"0x5208"`, string(r.Result))
	require.JSONEq(t, `[{"to":"`+addrB+`","data":"0xa9059cbb","gas":"0x10000"}]`, f.params["eth_estimateGas"])
	r = proxy(url.Values{"action": {"eth_call"}, "to": {addrB}, "data": {"0x"}, "blockTag": {"0x1"}})
	require.Equal(t, &rpcError{Code: 3, Message: "execution reverted", Data: json.RawMessage(`"0xdead"`)}, r.Error)
	require.JSONEq(t, `[{"to":"`+addrB+`","data":"0x"},"0x1"]`, f.params["eth_call"])
	r = proxy(url.Values{"action": {"eth_gasPrice"}})
	require.Equal(t, rpcServerError, r.Error.Code, "no endpoint answered")
	r = proxy(url.Values{"action": {"eth_sendRawTransaction"}, "hex": {"0x02f8"}})
	require.Equal(t, rpcMethodNotFound, r.Error.Code, "not listed by default")
	r = proxy(url.Values{"action": {"eth_call"}, "to": {"nothex"}})
	require.Equal(t, rpcInvalidParams, r.Error.Code)
	r = proxy(url.Values{"action": {"eth_getStorageAt"}, "address": {addrB}, "position": {"slot"}})
	require.Equal(t, rpcInvalidParams, r.Error.Code)
}

// Every contract is unverified here: getabi and getsourcecode answer as
// Etherscan does for one.
func TestEtherscanContractsAreUnverified(t *testing.T) {
	a := newTestAPI(t, config.API{})
	a.write(t, sampleChain(1))
	status, msg, result := a.es(t, "", url.Values{"module": {"contract"}, "action": {"getabi"}, "address": {addrB}})
	require.Equal(t, []string{"0", "NOTOK", `"Contract source code not verified"`}, []string{status, msg, string(result)})
	status, _, result = a.es(t, "", url.Values{"module": {"contract"}, "action": {"getsourcecode"}, "address": {addrB}})
	require.Equal(t, "1", status)
	var src []map[string]string
	require.NoError(t, json.Unmarshal(result, &src))
	require.Len(t, src, 1)
	require.Equal(t, "Contract source code not verified", src[0]["ABI"])
	require.Equal(t, "", src[0]["SourceCode"])
	status, _, _ = a.es(t, "", url.Values{"module": {"contract"}, "action": {"getabi"}, "address": {"0x12"}})
	require.Equal(t, "0", status)
}

// A node that does not answer totalSupply() within the request leaves
// time for the fallback the action documents: the transfers' sum.
func TestTokenSupplyFallsBackWhenTheNodeIsSlow(t *testing.T) {
	asked := 0
	a := newTestAPI(t, config.API{MaxPageSize: 50, MaxLogRange: 100, EtherscanMaxRecords: 100, RequestTimeout: time.Second},
		func(o *Options) {
			o.Forward = func(ctx context.Context, _, method string, _ []json.RawMessage) (json.RawMessage, error) {
				asked++
				<-ctx.Done() // no answer in time
				return nil, &rpc.TransientError{Method: method, Endpoint: "main", Attempts: 1, Err: ctx.Err()}
			}
		})
	a.write(t, tokenChain(10))
	st, msg, res := a.es(t, "", vals("module", "stats", "action", "tokensupply", "contractaddress", tok20))
	require.Equal(t, "1", st, "%s: %s", msg, res)
	require.JSONEq(t, `"1000000000000000000000000"`, string(res), "the mints less the burns")
	require.Equal(t, 1, asked, "the node was asked first")
}
