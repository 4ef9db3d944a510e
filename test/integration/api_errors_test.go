package integration

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/stretchr/testify/require"
)

// checkMalformed sends malformed requests to every route: each gets the
// documented status, and a message naming the parameter to blame; none
// gets a 500. REST errors are {"status","error","parameter","message"};
// Etherscan's are its envelope with status "0" (HTTP 200, as Etherscan).
func checkMalformed(h *apiHarness, nc *nodeChain, head uint64) {
	t := h.t
	c := "/v1/chains/" + h.chainID
	hash := "0x" + strings.Repeat("ab", 32)
	addr := "0x" + strings.Repeat("cd", 20)
	blocksCursor := base64.RawURLEncoding.EncodeToString([]byte(`{"k":"blocks","b":3}`))
	otherBlockCursor := base64.RawURLEncoding.EncodeToString([]byte(`{"k":"block-txs","b":2,"i":1}`))
	rest := []struct {
		method, path string
		status       int
		code, param  string
		message      string
	}{
		{"GET", "/v1/chains/nope/blocks/1", 404, "not_found", "", `chain "nope" is not served here`},
		{"GET", c + "/blocks/abc", 400, "bad_parameter", "height", `height: "abc" is not a decimal block height`},
		{"GET", c + "/blocks/-1", 400, "bad_parameter", "height", `"-1" is not a decimal block height`},
		{"GET", c + "/blocks/0x10", 400, "bad_parameter", "height", `"0x10" is not a decimal block height`},
		{"GET", c + "/blocks/99999999999999999999999", 400, "bad_parameter", "height", "out of range"},
		{"GET", c + fmt.Sprintf("/blocks/%d", head+1000), 404, "not_found", "", fmt.Sprintf("height %d is not indexed yet", head+1000)},
		{"GET", c + "/blocks/1?foo=bar", 400, "bad_parameter", "foo", "foo: unknown parameter"},
		{"GET", c + "/blocks/hash/0x1234", 400, "bad_parameter", "hash", "has 4 hex digits; expected a 32-byte hash"},
		{"GET", c + "/blocks/hash/" + strings.Repeat("ab", 32), 400, "bad_parameter", "hash", "has no 0x prefix"},
		{"GET", c + "/blocks/hash/0x" + strings.Repeat("g", 64), 400, "bad_parameter", "hash", "is not hex"},
		{"GET", c + "/blocks/hash/" + hash, 404, "not_found", "", "no canonical block " + hash},
		{"GET", c + "/txs/0xzz", 400, "bad_parameter", "hash", "hash: \"0xzz\" is not hex"},
		{"GET", c + "/txs/" + hash, 404, "not_found", "", "no canonical transaction " + hash},
		{"GET", c + "/addresses/0x123/txs", 400, "bad_parameter", "address", "expected a 20-byte address"},
		{"GET", c + "/addresses/" + addr + "/txs?from=10&to=5", 400, "bad_parameter", "from", "from: 10 is above to (5)"},
		{"GET", c + "/addresses/" + addr + "/txs?limit=0", 400, "bad_parameter", "limit", `limit: "0" is not a whole number of at least 1`},
		{"GET", c + "/addresses/" + addr + "/txs?limit=1001", 400, "bad_parameter", "limit", "1001 is above the largest page, 100"},
		{"GET", c + "/addresses/" + addr + "/txs?cursor=!!!", 400, "bad_parameter", "cursor", "not a cursor this API issued"},
		{"GET", c + "/addresses/" + addr + "/txs?cursor=" + blocksCursor, 400, "bad_parameter", "cursor", "a cursor of another listing (blocks)"},
		{"GET", c + "/blocks/1/txs?cursor=" + otherBlockCursor, 400, "bad_parameter", "cursor", "belongs to another block"},
		{"GET", c + "/blocks", 400, "bad_parameter", "from", "from: required"},
		{"GET", c + "/blocks?from=5&to=2", 400, "bad_parameter", "from", "from: 5 is above to (2)"},
		{"GET", c + "/blocks?from=1&from_time=5", 400, "bad_parameter", "from_time", "not both"},
		{"GET", c + "/blocks?from_time=yesterday", 400, "bad_parameter", "from_time", "neither unix seconds nor an RFC 3339 time"},
		{"GET", c + "/blocks?from_time=100&to_time=50", 400, "bad_parameter", "from_time", "100 is after to_time (50)"},
		{"GET", c + "/blocks?to_time=50", 400, "bad_parameter", "from_time", "from_time: required with to_time"},
		{"GET", c + "/blocks?from=1&limit=abc", 400, "bad_parameter", "limit", `"abc" is not a whole number`},
		{"GET", c + "/blocks?from=1&from=2", 400, "bad_parameter", "from", "given 2 times"},
		{"GET", c + "/logs?to=5", 400, "bad_parameter", "from", "from: required"},
		{"GET", c + "/logs?from=0", 400, "bad_parameter", "to", "to: required"},
		{"GET", c + "/logs?from=0&to=20000", 400, "bad_parameter", "to", "spans 20001 heights, more than 10000 (api.max_log_range)"},
		{"GET", c + "/logs?from=9&to=3", 400, "bad_parameter", "from", "from: 9 is above to (3)"},
		{"GET", c + "/logs?from=0&to=5&address=0xabc", 400, "bad_parameter", "address", "expected a 20-byte address"},
		{"GET", c + "/logs?from=0&to=5&topic0=0x12", 400, "bad_parameter", "topic0", "expected a 32-byte hash"},
		{"GET", c + "/logs?from=0&to=5&topic5=" + hash, 400, "bad_parameter", "topic5", "unknown parameter"},
		{"GET", c + "/stats?from=5", 400, "bad_parameter", "to", "to: required"},
		{"GET", c + "/stats?from=9&to=1", 400, "bad_parameter", "from", "from: 9 is above to (1)"},
		{"GET", c + "/stats?from=x&to=1", 400, "bad_parameter", "from", `"x" is not a decimal block height`},
		{"GET", c + "/status?verbose=1", 400, "bad_parameter", "verbose", "unknown parameter: this route takes none"},
		{"GET", c + "/tokens/0x12", 400, "bad_parameter", "address", "expected a 20-byte address"},
		{"GET", c + "/tokens/" + addr, 404, "not_found", "", "no transfer of token " + addr},
		{"GET", c + "/tokens/" + addr + "/transfers?standard=erc777", 400, "bad_parameter", "standard", "none of erc20, erc721, erc1155"},
		{"GET", c + "/tokens/" + addr + "/transfers?token=" + addr, 400, "bad_parameter", "token", "unknown parameter"},
		{"GET", c + "/tokens/" + addr + "/transfers?cursor=" + blocksCursor, 400, "bad_parameter", "cursor", "a cursor of another listing (blocks)"},
		{"GET", c + "/tokens/" + addr + "/holders?token_id=0x1", 400, "bad_parameter", "token_id", "not a decimal token id"},
		{"GET", c + "/tokens/" + addr + "/holders?limit=1001", 400, "bad_parameter", "limit", "above the largest page"},
		{"GET", c + "/addresses/" + addr + "/transfers?from=9&to=1", 400, "bad_parameter", "from", "from: 9 is above to (1)"},
		{"GET", c + "/addresses/" + addr + "/transfers?token=0x1", 400, "bad_parameter", "token", "expected a 20-byte address"},
		{"GET", c + "/addresses/" + addr + "/tokens?token=abc", 400, "bad_parameter", "token", "has no 0x prefix"},
		{"GET", c + "/events?from=0&to=5", 400, "bad_parameter", "event", "give an event, an address, or both"},
		{"GET", c + "/events?from=0&to=5&event=Transfer(address", 400, "bad_parameter", "event", "bad signature"},
		{"GET", c + "/events?from=0&to=20000&address=" + addr, 400, "bad_parameter", "to", "more than 10000 (api.max_log_range)"},
		{"GET", c + "/txs/" + hash + "/input", 400, "bad_parameter", "function", "function: required"},
		{"GET", c + "/txs/" + hash + "/input?function=%7B%22type%22", 400, "bad_parameter", "function", "bad signature"},
		{"GET", c + "/txs/" + hash + "/input?function=f(uint256)", 404, "not_found", "", "no canonical transaction " + hash},
		{"POST", c + "/blocks/1", 405, "method_not_allowed", "", "POST is not allowed here"},
		{"DELETE", c + "/etherscan/api", 405, "method_not_allowed", "", "DELETE is not allowed here"},
	}
	for _, tc := range rest {
		req, err := http.NewRequest(tc.method, h.base+tc.path, nil)
		require.NoError(t, err)
		var code int
		var body []byte
		if tc.method == http.MethodGet {
			code, body = h.contract.Do(t, h.client, req)
		} else {
			// Methods the document has no operation for: an Error all the same.
			resp, err := h.client.Do(req)
			require.NoError(t, err)
			body, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			code = resp.StatusCode
			require.NoError(t, h.contract.CheckSchema("Error", body))
			require.NotEmpty(t, resp.Header.Get("Allow"))
		}
		require.Equal(t, tc.status, code, "%s %s: %s", tc.method, tc.path, body)
		var e struct {
			Status    int
			Error     string
			Parameter string
			Message   string
		}
		require.NoError(t, json.Unmarshal(body, &e), "%s", body)
		require.Equal(t, tc.status, e.Status, tc.path)
		require.Equal(t, tc.code, e.Error, tc.path)
		require.Equal(t, tc.param, e.Parameter, tc.path)
		require.Contains(t, e.Message, tc.message, tc.path)
		if tc.param != "" {
			require.True(t, strings.HasPrefix(e.Message, tc.param+": "), "%s: the message starts with the parameter: %s", tc.path, e.Message)
		}
	}

	// A path no route has: a JSON 404 too (not in the document, so checked
	// against its Error schema).
	resp, err := h.client.Get(h.base + "/v1/nope")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, 404, resp.StatusCode)
	require.NoError(t, h.contract.CheckSchema("Error", body))

	es := []struct {
		kv      []string
		message string
	}{
		{[]string{"module", "bogus", "action", "txlist"}, "Error! Missing Or invalid Module name"},
		{[]string{"module", "account", "action", "balancehistory"}, "Error! Missing Or invalid Action name"},
		{[]string{"module", "account", "action", "txlist", "address", "0x12"}, "Error! Invalid address format"},
		{[]string{"module", "account", "action", "txlist", "address", addr, "sort", "up"}, `Error! Invalid sort: "up"`},
		{[]string{"module", "account", "action", "txlist", "address", addr, "page", "0"}, "Error! Invalid page"},
		{[]string{"module", "account", "action", "txlist", "address", addr, "offset", "10001"}, "Error! Invalid offset: 10001 is above the most records per page, 10000"},
		{[]string{"module", "account", "action", "txlist", "address", addr, "page", "2", "offset", "10000"}, "Error! Result window is too large"},
		{[]string{"module", "account", "action", "txlist", "address", addr, "page", "11", "offset", "1000"}, "Error! Result window is too large"},
		{[]string{"module", "account", "action", "txlist", "address", addr, "startblock", "abc"}, "Error! Invalid startblock"},
		{[]string{"module", "account", "action", "txlist", "address", addr, "startblock", "10", "endblock", "5"}, "Error! Invalid block range: startblock 10 is above endblock 5"},
		{[]string{"module", "logs", "action", "getLogs", "fromBlock", "0"}, "Error! Missing address or topic"},
		{[]string{"module", "logs", "action", "getLogs", "address", addr}, "Error! Missing fromBlock"},
		{[]string{"module", "logs", "action", "getLogs", "fromBlock", "0", "topic0", hash, "topic1", hash, "topic0_1_opr", "xor"}, `Error! Invalid topic0_1_opr: "xor"`},
		{[]string{"module", "logs", "action", "getLogs", "fromBlock", "0", "topic0", hash, "topic1", hash, "topic2", hash, "topic0_2_opr", "and"}, "Error! Invalid topic0_2_opr: it joins topic0 and topic2"},
		{[]string{"module", "logs", "action", "getLogs", "fromBlock", "0", "toBlock", "20000", "address", addr}, "Error! Block range too wide"},
		{[]string{"module", "logs", "action", "getLogs", "fromBlock", "x", "address", addr}, "Error! Invalid fromBlock"},
		{[]string{"module", "logs", "action", "getLogs", "fromBlock", "0", "topic3", "0x1"}, "Error! Invalid topic3"},
		{[]string{"module", "block", "action", "getblocknobytime", "timestamp", "1", "closest", "near"}, `Error! Invalid closest: "near"`},
		{[]string{"module", "block", "action", "getblocknobytime", "timestamp", "soon", "closest", "before"}, "Error! Invalid timestamp"},
		{[]string{"module", "account", "action", "tokentx"}, "Error! Missing address or contractaddress"},
		{[]string{"module", "account", "action", "tokennfttx", "address", "0x12"}, "Error! Invalid address format"},
		{[]string{"module", "account", "action", "token1155tx", "contractaddress", "zz"}, "Error! Invalid contractaddress format"},
		{[]string{"module", "account", "action", "tokentx", "address", addr, "offset", "10001"}, "Error! Invalid offset"},
		{[]string{"module", "account", "action", "balance", "address", "0x12"}, "Error! Invalid address format"},
		{[]string{"module", "account", "action", "balancemulti", "address", addr + ",0x12"}, "Error! Invalid address format"},
		{[]string{"module", "account", "action", "balance", "address", addr, "tag", "yesterday"}, "Error! Invalid tag"},
		{[]string{"module", "account", "action", "tokenbalance", "address", addr}, "Error! Missing contractaddress"},
		{[]string{"module", "account", "action", "tokenbalance", "address", addr, "contractaddress", addr, "tag", "earliest"}, "Error! Invalid tag"},
		{[]string{"module", "stats", "action", "tokensupply", "contractaddress", addr}, "Error! Token supply of"},
		{[]string{"module", "transaction", "action", "getstatus", "txhash", "0x1"}, "Error! Invalid txhash format"},
		{[]string{"module", "transaction", "action", "gettxreceiptstatus"}, "Error! Invalid txhash format"},
		{[]string{"module", "account", "action", "txlist", "address", addr, "chainid", "999999"}, "Missing or unsupported chainid parameter"},
	}
	for _, tc := range es {
		var env struct{ Status, Message, Result string }
		h.es(200, &env, tc.kv...)
		require.Equal(t, "0", env.Status, "%v", tc.kv)
		require.Equal(t, "NOTOK", env.Message, "%v", tc.kv)
		require.True(t, strings.HasPrefix(env.Result, tc.message), "%v: %q does not start with %q", tc.kv, env.Result, tc.message)
	}
	rpcBad := []struct {
		kv      []string
		message string
	}{
		{[]string{"module", "proxy", "action", "eth_getBlockByNumber", "tag", "12"}, `invalid argument 0: tag "12" is not a hex block number`},
		{[]string{"module", "proxy", "action", "eth_getBlockByNumber", "tag", "pending"}, `tag "pending" is not a hex block number`},
		{[]string{"module", "proxy", "action", "eth_getBlockByNumber", "tag", "0x1", "boolean", "yes"}, `invalid argument 1: boolean "yes"`},
		{[]string{"module", "proxy", "action", "eth_getTransactionByHash", "txhash", "0x12"}, "invalid argument 0: txhash:"},
		{[]string{"module", "proxy", "action", "eth_getTransactionReceipt"}, "invalid argument 0: txhash: empty"},
		{[]string{"module", "proxy", "action", "eth_getBlockTransactionCountByNumber", "tag", "12"}, `tag "12" is not a hex block number`},
		{[]string{"module", "proxy", "action", "eth_getTransactionByBlockNumberAndIndex", "tag", "0x1", "index", "1"}, `invalid argument 1: index "1"`},
		{[]string{"module", "proxy", "action", "eth_getStorageAt", "address", addr, "position", "slot"}, `position "slot" is not a storage slot`},
		{[]string{"module", "proxy", "action", "eth_call", "to", "zz"}, `to "zz" is not hex`},
		{[]string{"module", "proxy", "action", "eth_getCode", "address", "0x12"}, "invalid argument"},
	}
	for _, tc := range rpcBad {
		var e struct {
			JSONRPC string
			Error   struct {
				Code    int
				Message string
			}
		}
		h.es(200, &e, tc.kv...)
		require.Equal(t, "2.0", e.JSONRPC)
		require.Equal(t, -32602, e.Error.Code, "%v", tc.kv)
		require.Contains(t, e.Error.Message, tc.message, "%v", tc.kv)
	}
	n := checkMalformedJSONRPC(h)
	t.Logf("%d malformed inputs: %d REST, 1 unknown route, %d Etherscan, %d proxy, %d JSON-RPC",
		len(rest)+1+len(es)+len(rpcBad)+n, len(rest), len(es), len(rpcBad), n)
}

// checkMalformedJSONRPC posts hostile bodies to the JSON-RPC route: each
// gets its JSON-RPC error (HTTP 200, or the documented 4xx before any
// call is read), never a 5xx, and no answer names the node's URL, the
// node methods' included.
func checkMalformedJSONRPC(h *apiHarness) int {
	t := h.t
	call := func(method, params string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":` + params + `}`
	}
	hash := `"0x` + strings.Repeat("ab", 32) + `"`
	cases := []struct {
		body   string
		status int
		code   int
	}{
		{`not json`, 200, -32700},
		{`{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber"`, 200, -32700},
		{`"eth_blockNumber"`, 200, -32600},
		{`{"jsonrpc":"2.0","id":[1],"method":"eth_blockNumber"}`, 200, -32600},
		{`{"jsonrpc":"2.0","id":1,"method":"` + strings.Repeat("x", 5000) + `"}`, 200, -32601},
		{`[` + strings.TrimSuffix(strings.Repeat(call("eth_blockNumber", "[]")+",", 1001), ",") + `]`, 200, -32600},
		{call("eth_getBlockByNumber", `["0x1", "yes"]`), 200, -32602},
		{call("eth_getBlockByNumber", `[{"blockHash": 5}]`), 200, -32602},
		{call("eth_getBlockByNumber", `["0x10000000000000000"]`), 200, -32602},
		{call("eth_getTransactionByHash", `["0x`+strings.Repeat("zz", 32)+`"]`), 200, -32602},
		{call("eth_getTransactionByBlockNumberAndIndex", `["0x1", "-1"]`), 200, -32602},
		{call("eth_getLogs", `[{"fromBlock": "0x0", "toBlock": "latest", "topics": [[`+hash+`, 7]]}]`), 200, -32602},
		{call("eth_getLogs", `[{"address": ["0x12"]}]`), 200, -32602},
		{call("eth_getLogs", `[{"fromBlock": "0xffffffffffffffff"}]`), 200, -32000},
		{call("eth_getLogs", `"filter"`), 200, -32602},
		{call("eth_getBalance", `["0x12", "latest"]`), 200, -32602},
		{call("eth_call", `[{"to": "not an address"}, "latest"]`), 200, -32602},
		{call("eth_sendRawTransaction", `["0x00"]`), 200, -32601},
		// The struct logger re-executes: the node's, and this API does
		// not send it there; the callTracer is the index's, which has no
		// such transaction.
		{call("debug_traceTransaction", `[`+hash+`]`), 200, -32602},
		{call("debug_traceTransaction", `[`+hash+`, {"tracer": "prestateTracer"}]`), 200, -32602},
		{call("debug_traceTransaction", `[`+hash+`, {"tracer": "callTracer"}]`), 200, -32000},
		{call("admin_peers", `[]`), 200, -32601},
	}
	for _, tc := range cases {
		resp, err := h.client.Post(h.base+"/v1/chains/"+h.chainID+"/rpc", "application/json", strings.NewReader(tc.body))
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		clipped := tc.body[:min(len(tc.body), 120)]
		require.Equal(t, tc.status, resp.StatusCode, "%s: %s", clipped, body)
		var r struct {
			Error *struct{ Code int } `json:"error"`
		}
		require.NoError(t, json.Unmarshal(body, &r), "%s: %s", clipped, body)
		require.NotNil(t, r.Error, "%s: %s", clipped, body)
		require.Equal(t, tc.code, r.Error.Code, "%s: %s", clipped, body)
		require.NotContains(t, string(body), strings.TrimPrefix(h.nodeURL, "http://"), "%s: the node's URL", clipped)
	}
	return len(cases)
}
