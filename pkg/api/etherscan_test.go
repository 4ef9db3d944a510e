package api

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/config"
)

// Formats of Etherscan's fields, as its documentation shows them: the
// account module's numbers are decimal strings, the logs module's are hex
// strings with zero written "0x".
var (
	decimal  = regexp.MustCompile(`^(0|[1-9][0-9]*)$`)
	esHexRE  = regexp.MustCompile(`^0x([1-9a-f][0-9a-f]*)?$`)
	hashRE   = regexp.MustCompile(`^0x[0-9a-f]{64}$`)
	addrRE   = regexp.MustCompile(`^0x[0-9a-f]{40}$`)
	addrOrNo = regexp.MustCompile(`^(0x[0-9a-f]{40})?$`)
	bytesRE  = regexp.MustCompile(`^0x([0-9a-f]{2})*$`)
	anyText  = regexp.MustCompile(`^`)
	methodRE = regexp.MustCompile(`^0x([0-9a-f]{8})?$`)
	statusRE = regexp.MustCompile(`^[01]?$`)
)

var txlistFormat = map[string]*regexp.Regexp{
	"blockNumber": decimal, "timeStamp": decimal, "hash": hashRE, "nonce": decimal, "blockHash": hashRE,
	"transactionIndex": decimal, "from": addrRE, "to": addrOrNo, "value": decimal, "gas": decimal,
	"gasPrice": decimal, "isError": regexp.MustCompile(`^[01]$`), "txreceipt_status": statusRE, "input": bytesRE,
	"contractAddress": addrOrNo, "cumulativeGasUsed": decimal, "gasUsed": decimal, "confirmations": decimal,
	"methodId": methodRE, "functionName": anyText,
}

var getLogsFormat = map[string]*regexp.Regexp{
	"address": addrRE, "data": bytesRE, "blockNumber": esHexRE, "timeStamp": esHexRE, "gasPrice": esHexRE,
	"gasUsed": esHexRE, "logIndex": esHexRE, "transactionHash": hashRE, "transactionIndex": esHexRE,
}

// tideline's additions to Etherscan's fields, which its clients ignore.
var getLogsExtra = map[string]*regexp.Regexp{"blockHash": hashRE}

func recorded(t *testing.T, name string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "etherscan", name))
	require.NoError(t, err)
	var v map[string]any
	require.NoError(t, json.Unmarshal(b, &v))
	return v
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// requireFormat checks item against the formats: the recorded answer's
// keys, plus extras, each value matching.
func requireFormat(t *testing.T, recordedItem, item map[string]any, format, extra map[string]*regexp.Regexp) {
	t.Helper()
	want := keys(recordedItem)
	for k := range extra {
		want = append(want, k)
	}
	sort.Strings(want)
	require.Equal(t, want, keys(item), "the same fields as Etherscan's")
	for k, v := range item {
		re := format[k]
		if re == nil {
			re = extra[k]
		}
		if k == "topics" {
			for _, tp := range v.([]any) {
				require.Regexp(t, hashRE, tp)
			}
			continue
		}
		require.NotNil(t, re, "no format for %s", k)
		s, ok := v.(string)
		require.True(t, ok, "%s is a string, as Etherscan's", k)
		require.Regexp(t, re, s, "%s", k)
		if rv, ok := recordedItem[k]; ok {
			require.Regexp(t, re, rv, "the recorded %s has the format too", k)
		}
	}
}

func (a *testAPI) etherscan(t *testing.T, kv ...string) (int, map[string]any) {
	t.Helper()
	q := url.Values{}
	for i := 0; i < len(kv); i += 2 {
		q.Set(kv[i], kv[i+1])
	}
	code, body := a.get(t, "/v1/chains/c1/etherscan/api?"+q.Encode())
	var v map[string]any
	require.NoError(t, json.Unmarshal(body, &v), "%s", body)
	return code, v
}

// tideline's Etherscan answers against recorded answers of Etherscan's
// documented format: the same envelope, the same fields, the same formats.
func TestEtherscanAnswersHaveTheDocumentedFormat(t *testing.T) {
	a := newTestAPI(t, config.API{})
	data := sampleChain(10)
	a.write(t, data)

	// account/txlist
	code, got := a.etherscan(t, "module", "account", "action", "txlist", "address", addrB, "startblock", "0",
		"endblock", "99999999", "page", "1", "offset", "10", "sort", "asc", "apikey", "YourApiKeyToken")
	require.Equal(t, http.StatusOK, code)
	rec := recorded(t, "txlist.json")
	require.Equal(t, keys(rec), keys(got))
	require.Equal(t, "1", got["status"])
	require.Equal(t, "OK", got["message"])
	items := got["result"].([]any)
	require.Len(t, items, 10)
	for _, it := range items {
		requireFormat(t, rec["result"].([]any)[0].(map[string]any), it.(map[string]any), txlistFormat, nil)
	}
	first := items[0].(map[string]any)
	require.Equal(t, map[string]any{
		"blockNumber": "0", "timeStamp": "1700000000", "hash": data[0].Transactions[0].Hash, "nonce": "0",
		"blockHash": data[0].Block.Hash, "transactionIndex": "0", "from": addrA, "to": addrB,
		"value": "1000000000000000000", "gas": "50000", "gasPrice": "900000000", "isError": "0", "txreceipt_status": "1",
		"input": "0xa9059cbb00000000", "contractAddress": "", "cumulativeGasUsed": "21000", "gasUsed": "21000",
		"confirmations": "10", "methodId": "0xa9059cbb", "functionName": "",
	}, first)
	// A failed creation: isError 1, receipt status 0, no recipient.
	_, got = a.etherscan(t, "module", "account", "action", "txlist", "address", contractOf(2))
	creation := got["result"].([]any)[0].(map[string]any)
	requireFormat(t, rec["result"].([]any)[0].(map[string]any), creation, txlistFormat, nil)
	require.Equal(t, []any{"1", "0", "", contractOf(2)}, []any{creation["isError"], creation["txreceipt_status"], creation["to"], creation["contractAddress"]})
	_, got = a.etherscan(t, "module", "account", "action", "txlist", "address", "0x"+strings.Repeat("9", 40))
	require.Equal(t, recorded(t, "txlist_empty.json"), got)

	// logs/getLogs
	_, got = a.etherscan(t, "module", "logs", "action", "getLogs", "fromBlock", "0", "toBlock", "latest",
		"address", contractOf(0), "topic0", eventTopic)
	rec = recorded(t, "getlogs.json")
	require.Equal(t, keys(rec), keys(got))
	logs := got["result"].([]any)
	require.Len(t, logs, 10)
	for _, l := range logs {
		requireFormat(t, rec["result"].([]any)[0].(map[string]any), l.(map[string]any), getLogsFormat, getLogsExtra)
	}
	l0 := logs[0].(map[string]any)
	require.Equal(t, []any{"0x", "0x", "0x", "0x6553f100", "0x35a4e900", "0x5208"},
		[]any{l0["blockNumber"], l0["logIndex"], l0["transactionIndex"], l0["timeStamp"], l0["gasPrice"], l0["gasUsed"]},
		"zero is \"0x\"; the block time and the transaction's gas as hex")
	_, got = a.etherscan(t, "module", "logs", "action", "getLogs", "fromBlock", "0", "toBlock", "9", "topic0", h32('f', 9))
	require.Equal(t, recorded(t, "getlogs_empty.json"), got)

	// block/getblocknobytime
	_, got = a.etherscan(t, "module", "block", "action", "getblocknobytime", "timestamp", "1700000030", "closest", "before")
	rec = recorded(t, "getblocknobytime.json")
	require.Equal(t, keys(rec), keys(got))
	require.Equal(t, "2", got["result"])
	require.Regexp(t, decimal, rec["result"])
	_, got = a.etherscan(t, "module", "block", "action", "getblocknobytime", "timestamp", "1700000030", "closest", "after")
	require.Equal(t, "3", got["result"])

	// proxy/eth_blockNumber
	_, got = a.etherscan(t, "module", "proxy", "action", "eth_blockNumber")
	rec = recorded(t, "eth_blocknumber.json")
	require.Equal(t, keys(rec), keys(got))
	require.Equal(t, "0x9", got["result"])

	// An error: NOTOK with "Error! …".
	_, got = a.etherscan(t, "module", "account", "action", "txlist", "address", "0xnope")
	rec = recorded(t, "error.json")
	require.Equal(t, keys(rec), keys(got))
	require.Equal(t, rec["status"], got["status"])
	require.Equal(t, rec["message"], got["message"])
	require.True(t, strings.HasPrefix(got["result"].(string), rec["result"].(string)), "%s", got["result"])

	// POST, as Etherscan takes it.
	resp, err := http.PostForm(a.srv.URL+"/v1/chains/c1/etherscan/api", url.Values{
		"module": {"proxy"}, "action": {"eth_blockNumber"},
	})
	require.NoError(t, err)
	defer resp.Body.Close()
	var post map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&post))
	require.Equal(t, "0x9", post["result"])
}

// The Etherscan rate-limit answer is Etherscan's own envelope, with the
// 429 and Retry-After every rate limit of this API answers (clients such
// as ethers' back off on both).
func TestEtherscanRateLimitAnswer(t *testing.T) {
	a := newTestAPI(t, config.API{RateLimit: 0.001, Burst: 1})
	a.write(t, sampleChain(1))
	_, got := a.etherscan(t, "module", "proxy", "action", "eth_blockNumber")
	require.Equal(t, "0x0", got["result"])
	code, got := a.etherscan(t, "module", "proxy", "action", "eth_blockNumber")
	require.Equal(t, http.StatusTooManyRequests, code)
	require.Equal(t, recorded(t, "rate_limit.json"), got)
}
