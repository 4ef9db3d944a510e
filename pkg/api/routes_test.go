package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/internal/testkit"
	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/storage"
	"github.com/tideline-dev/tideline/pkg/stream"
)

// The document is valid OpenAPI 3 and lists exactly the routes served.
func TestOpenAPIDocumentListsTheRoutes(t *testing.T) {
	c := testkit.NewAPIContract(t)
	want := map[string][]string{
		"/v1/chains":                              {"GET"},
		"/v1/chains/{id}/status":                  {"GET"},
		"/v1/chains/{id}/blocks":                  {"GET"},
		"/v1/chains/{id}/blocks/{height}":         {"GET"},
		"/v1/chains/{id}/blocks/hash/{hash}":      {"GET"},
		"/v1/chains/{id}/blocks/{height}/txs":     {"GET"},
		"/v1/chains/{id}/txs/{hash}":              {"GET"},
		"/v1/chains/{id}/addresses/{address}/txs": {"GET"},
		"/v1/chains/{id}/logs":                    {"GET"},
		"/v1/chains/{id}/stats":                   {"GET"},
		"/v1/chains/{id}/etherscan/api":           {"GET", "POST"},
		"/openapi.json":                           {"GET"},

		"/v1/chains/{id}/tokens/{address}":                 {"GET"},
		"/v1/chains/{id}/tokens/{address}/transfers":       {"GET"},
		"/v1/chains/{id}/tokens/{address}/holders":         {"GET"},
		"/v1/chains/{id}/addresses/{address}/transfers":    {"GET"},
		"/v1/chains/{id}/addresses/{address}/tokens":       {"GET"},
		"/v1/chains/{id}/events":                           {"GET"},
		"/v1/chains/{id}/txs/{hash}/input":                 {"GET"},
		"/v2/api":                                          {"GET", "POST"},
		"/v1/chains/{id}/txs/{hash}/trace":                 {"GET"},
		"/v1/chains/{id}/addresses/{address}/internal-txs": {"GET"},
		"/v1/chains/{id}/stream":                           {"GET"},
		"/v1/chains/{id}/rpc":                              {"POST"},
	}
	got := map[string][]string{}
	for path, item := range c.Doc.Paths.Map() {
		for method := range item.Operations() {
			got[path] = append(got[path], method)
		}
	}
	for p := range got {
		sortStrings(got[p])
	}
	require.Equal(t, want, got)

	// And /openapi.json serves it byte for byte.
	a := newTestAPI(t, config.API{})
	code, body := a.get(t, "/openapi.json")
	require.Equal(t, http.StatusOK, code)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(body, &doc))
	require.Equal(t, "3.0.3", doc["openapi"])
}

func sortStrings(s []string) {
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
}

func TestRESTRoutesOnStoredBlocks(t *testing.T) {
	a := newTestAPI(t, config.API{MaxPageSize: 50})
	data := sampleChain(10)
	a.write(t, data)

	var chains struct{ Chains []ChainInfo }
	a.getJSON(t, "/v1/chains", 200, &chains)
	require.Len(t, chains.Chains, 1)
	require.Equal(t, testChain, chains.Chains[0].ID)

	var b Block
	a.getJSON(t, "/v1/chains/c1/blocks/3", 200, &b)
	want, _ := json.Marshal(blockOf(data[3].Block))
	got, _ := json.Marshal(b)
	require.JSONEq(t, string(want), string(got))
	a.getJSON(t, "/v1/chains/c1/blocks/hash/"+strings.ToUpper(data[5].Block.Hash[2:3])+"x"+data[5].Block.Hash[3:], 400, nil)
	a.getJSON(t, "/v1/chains/c1/blocks/hash/"+data[5].Block.Hash, 200, &b)
	require.Equal(t, uint64(5), b.Number)

	// A page of heights, then the next one from the cursor.
	var blocks page[Block]
	a.getJSON(t, "/v1/chains/c1/blocks?from=2&to=7&limit=4", 200, &blocks)
	require.Equal(t, []uint64{2, 3, 4, 5}, numbers(blocks.Items))
	require.NotNil(t, blocks.NextCursor)
	require.Equal(t, uint64(9), blocks.Watermark)
	a.getJSON(t, "/v1/chains/c1/blocks?from=2&to=7&limit=4&cursor="+*blocks.NextCursor, 200, &blocks)
	require.Equal(t, []uint64{6, 7}, numbers(blocks.Items))
	require.Nil(t, blocks.NextCursor)
	// To defaults to the watermark; a range above it is empty, not an error.
	a.getJSON(t, "/v1/chains/c1/blocks?from=8", 200, &blocks)
	require.Equal(t, []uint64{8, 9}, numbers(blocks.Items))
	a.getJSON(t, "/v1/chains/c1/blocks?from=20&to=30", 200, &blocks)
	require.Empty(t, blocks.Items)
	// By time: blocks 2-4, in RFC 3339 and unix seconds.
	from := time.Unix(t0+24, 0).UTC().Format(time.RFC3339)
	a.getJSON(t, fmt.Sprintf("/v1/chains/c1/blocks?from_time=%s&to_time=%d", from, t0+12*4+5), 200, &blocks)
	require.Equal(t, []uint64{2, 3, 4}, numbers(blocks.Items))
	a.getJSON(t, fmt.Sprintf("/v1/chains/c1/blocks?from_time=%d&limit=3", t0+1), 200, &blocks)
	require.Equal(t, []uint64{1, 2, 3}, numbers(blocks.Items))
	require.NotNil(t, blocks.NextCursor)

	var txs page[stream.Transaction]
	a.getJSON(t, "/v1/chains/c1/blocks/4/txs?limit=1", 200, &txs)
	require.Len(t, txs.Items, 1)
	require.Equal(t, data[4].Transactions[0].Hash, txs.Items[0].Hash)
	a.getJSON(t, "/v1/chains/c1/blocks/4/txs?limit=1&cursor="+*txs.NextCursor, 200, &txs)
	require.Len(t, txs.Items, 1)
	require.Equal(t, data[4].Transactions[1].Hash, txs.Items[0].Hash)
	require.Nil(t, txs.Items[0].To, "a creation has no recipient")
	require.Equal(t, contractOf(4), *txs.Items[0].ContractAddress)
	require.Nil(t, txs.NextCursor)

	var tx stream.Transaction
	a.getJSON(t, "/v1/chains/c1/txs/"+data[7].Transactions[0].Hash, 200, &tx)
	want, _ = json.Marshal(stream.TransactionOf(data[7].Transactions[0]))
	got, _ = json.Marshal(tx)
	require.JSONEq(t, string(want), string(got))
	a.getJSON(t, "/v1/chains/c1/txs/"+h32('f', 1), 404, nil)

	// An address's transactions, newest first, three pages.
	var seen []string
	path := "/v1/chains/c1/addresses/" + strings.ToUpper(addrB[:2]) + addrB[2:] + "/txs?limit=4"
	a.getJSON(t, "/v1/chains/c1/addresses/"+addrB+"/txs?limit=4", 200, &txs)
	for {
		for _, tx := range txs.Items {
			seen = append(seen, tx.Hash)
		}
		if txs.NextCursor == nil {
			break
		}
		a.getJSON(t, path+"&cursor="+*txs.NextCursor, 200, &txs)
	}
	var wantSeen []string
	for h := 9; h >= 0; h-- {
		wantSeen = append(wantSeen, data[h].Transactions[0].Hash)
	}
	require.Equal(t, wantSeen, seen, "every transfer to B, newest first")
	a.getJSON(t, "/v1/chains/c1/addresses/"+contractOf(6)+"/txs", 200, &txs)
	require.Len(t, txs.Items, 1, "the creation of a contract is the contract's transaction")

	var logs page[stream.Log]
	a.getJSON(t, "/v1/chains/c1/logs?from=0&to=9&address="+contractOf(0)+"&topic0="+eventTopic+"&limit=6", 200, &logs)
	require.Len(t, logs.Items, 6)
	a.getJSON(t, "/v1/chains/c1/logs?from=0&to=9&address="+contractOf(0)+"&topic0="+eventTopic+"&limit=6&cursor="+*logs.NextCursor, 200, &logs)
	require.Len(t, logs.Items, 4)
	require.Nil(t, logs.NextCursor)
	a.getJSON(t, "/v1/chains/c1/logs?from=3&to=4&topic2="+padAddress(addrB), 200, &logs)
	require.Len(t, logs.Items, 2)
	a.getJSON(t, "/v1/chains/c1/logs?from=3&to=4&topic2="+padAddress(addrA), 200, &logs)
	require.Empty(t, logs.Items)

	// Above the watermark: not indexed yet. At or below the pruned height: gone.
	a.getJSON(t, "/v1/chains/c1/blocks/10", 404, nil)
	require.NoError(t, a.store.SaveState(context.Background(), testChain, storage.StatePrunedHeight, 2))
	var e apiError
	a.getJSON(t, "/v1/chains/c1/blocks/2", 410, &e)
	require.Equal(t, "gone", e.Code)
	a.getJSON(t, "/v1/chains/c1/blocks/3", 200, nil)
	a.getJSON(t, "/v1/chains/c1/blocks?from=1", 410, nil)
	a.getJSON(t, "/v1/chains/c1/logs?from=2&to=5", 410, nil)
	a.getJSON(t, "/v1/chains/c1/blocks/2/txs", 410, nil)
	a.getJSON(t, "/v1/chains/c1/txs/"+data[1].Transactions[0].Hash, 404, nil) // its rows are gone: not served
	a.getJSON(t, "/v1/chains/c1/addresses/"+addrB+"/txs?limit=50", 200, &txs)
	require.Len(t, txs.Items, 7, "heights 3-9 only")
}

func numbers(bs []Block) []uint64 {
	out := []uint64{}
	for _, b := range bs {
		out = append(out, b.Number)
	}
	return out
}

// Stats subtract two cumulative rows and say how far they hold.
func TestStatsFromAggregates(t *testing.T) {
	a := newTestAPI(t, config.API{})
	data := sampleChain(10)
	a.write(t, data)
	var st Stats
	a.getJSON(t, "/v1/chains/c1/stats?from=2&to=5", 200, &st)
	require.Nil(t, st.CountedTo, "nothing aggregated yet")
	require.False(t, st.Complete)
	require.Equal(t, "eventual", st.Consistency)

	// Cumulative rows up to height 6, the aggregator's height.
	var txs, logs, bytes uint64
	var rows [][]any
	for _, d := range data[:7] {
		txs += uint64(len(d.Transactions))
		logs += uint64(len(d.Logs))
		bytes += d.Block.Size
		rows = append(rows, []any{testChain, d.Block.Number, d.Block.Hash, txs, logs, bytes, uint64(1)})
	}
	a.insert(t, "aggregates", []string{"chain_id", "number", "block_hash", "txs", "logs", "bytes", "version"}, rows...)
	require.NoError(t, a.store.SaveState(context.Background(), testChain, storage.StateAggregatorHeight, 6))

	sum := func(from, to uint64) (uint64, uint64, uint64) {
		var t, l, b uint64
		for _, d := range data[from : to+1] {
			t += uint64(len(d.Transactions))
			l += uint64(len(d.Logs))
			b += d.Block.Size
		}
		return t, l, b
	}
	for _, r := range [][2]uint64{{0, 0}, {0, 6}, {2, 5}, {3, 3}, {6, 6}} {
		a.getJSON(t, fmt.Sprintf("/v1/chains/c1/stats?from=%d&to=%d", r[0], r[1]), 200, &st)
		tx, l, b := sum(r[0], r[1])
		require.Equal(t, [3]uint64{tx, l, b}, [3]uint64{st.Transactions, st.Logs, st.Bytes}, "range %v", r)
		require.True(t, st.Complete)
		require.Equal(t, r[1], *st.CountedTo)
	}
	a.getJSON(t, "/v1/chains/c1/stats?from=4&to=9", 200, &st)
	tx, l, b := sum(4, 6)
	require.Equal(t, [3]uint64{tx, l, b}, [3]uint64{st.Transactions, st.Logs, st.Bytes})
	require.False(t, st.Complete, "the aggregator is at 6")
	require.Equal(t, uint64(6), *st.CountedTo)
	a.getJSON(t, "/v1/chains/c1/stats?from=8&to=9", 200, &st)
	require.Nil(t, st.CountedTo)
}

// A slow query ends with a 503 at api.request_timeout, and other requests
// are answered meanwhile.
func TestRequestTimeout(t *testing.T) {
	slow := make(chan struct{})
	a := newTestAPI(t, config.API{RequestTimeout: 300 * time.Millisecond}, func(o *Options) {
		o.Store.Chain = blockingLogs{ChainStore: o.Store.Chain, entered: slow}
	})
	a.write(t, sampleChain(3))
	var wg sync.WaitGroup
	wg.Add(1)
	var code int
	var body []byte
	var took time.Duration
	go func() {
		defer wg.Done()
		start := time.Now()
		resp, err := http.Get(a.srv.URL + "/v1/chains/c1/logs?from=0&to=2")
		if err == nil {
			code = resp.StatusCode
			body, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		took = time.Since(start)
	}()
	<-slow
	a.getJSON(t, "/v1/chains/c1/blocks/1", 200, nil)
	wg.Wait()
	require.Equal(t, http.StatusServiceUnavailable, code, "%s", body)
	require.Contains(t, string(body), "api.request_timeout")
	require.Less(t, took, 3*time.Second)
}

// blockingLogs is the real store except that Logs waits for the request's
// deadline, as a heavy query would, and ends as storage ends a read that
// ran out of time.
type blockingLogs struct {
	ChainStore
	entered chan struct{}
}

func (b blockingLogs) Logs(ctx context.Context, _ string, _ storage.LogQuery) ([]chaindata.Log, error) {
	close(b.entered)
	<-ctx.Done()
	return nil, &storage.TimeoutError{What: "reading logs", Err: ctx.Err()}
}

func TestRateLimitPerClient(t *testing.T) {
	a := newTestAPI(t, config.API{RateLimit: 0.001, Burst: 2})
	a.write(t, sampleChain(2))
	a.getJSON(t, "/v1/chains", 200, nil)
	a.getJSON(t, "/v1/chains/c1/blocks/0", 200, nil)
	var e apiError
	a.getJSON(t, "/v1/chains/c1/blocks/1", 429, &e)
	require.Equal(t, "rate_limited", e.Code)
	code, body := a.get(t, "/v1/chains/c1/etherscan/api?module=proxy&action=eth_blockNumber")
	require.Equal(t, 429, code, "Etherscan's envelope, with the 429 of every rate limit")
	require.JSONEq(t, `{"status":"0","message":"NOTOK","result":"Max rate limit reached"}`, string(body))
}

// /metrics counts by route pattern and status, never by raw path.
func TestMetricsByRoutePattern(t *testing.T) {
	a := newTestAPI(t, config.API{}, func(o *Options) { o.Secrets = []string{"http://secret-node.example/key123"} })
	data := sampleChain(2)
	a.write(t, data)
	a.getJSON(t, "/v1/chains/c1/blocks/1", 200, nil)
	a.getJSON(t, "/v1/chains/c1/blocks/hash/"+data[0].Block.Hash, 200, nil)
	a.getJSON(t, "/v1/chains/c1/blocks/abc", 400, nil)
	resp, err := http.Get(a.srv.URL + "/nope/" + data[1].Block.Hash)
	require.NoError(t, err)
	resp.Body.Close()
	resp, err = http.Get(a.srv.URL + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	text, _ := io.ReadAll(resp.Body)
	m := string(text)
	require.Contains(t, m, `api_requests_total{code="200",route="GET /v1/chains/{id}/blocks/{height}"} 1`)
	require.Contains(t, m, `api_requests_total{code="400",route="GET /v1/chains/{id}/blocks/{height}"} 1`)
	require.Contains(t, m, `api_requests_total{code="200",route="GET /v1/chains/{id}/blocks/hash/{hash}"} 1`)
	require.Contains(t, m, `api_requests_total{code="404",route="unmatched"} 1`)
	require.Contains(t, m, `api_request_duration_seconds_bucket{route="GET /v1/chains/{id}/blocks/{height}",le="0.05"}`)
	require.Contains(t, m, `api_watermark_height{chain_id="c1"} 1`)
	require.NotContains(t, m, data[0].Block.Hash[2:])
	require.NotContains(t, m, data[1].Block.Hash[2:])
	require.NotContains(t, m, "secret-node")
}

// Chains defined at runtime (the registry, through ChainSource) are served
// after the next read; a failed read keeps the chains served.
func TestChainsFromTheSource(t *testing.T) {
	var mu sync.Mutex
	chains := map[string]config.Chain{testChain: {Type: config.ChainTypeEthereum, BlockTime: 12 * time.Second}}
	var fail error
	a := newTestAPI(t, config.API{}, func(o *Options) {
		o.Chains = nil
		o.ChainSource = func(context.Context) (map[string]config.Chain, error) {
			mu.Lock()
			defer mu.Unlock()
			out := map[string]config.Chain{}
			for k, v := range chains {
				out[k] = v
			}
			return out, fail
		}
	})
	a.write(t, sampleChain(2))
	var list struct{ Chains []ChainInfo }
	a.getJSON(t, "/v1/chains", 200, &list)
	require.Len(t, list.Chains, 1)
	a.getJSON(t, "/v1/chains/c2/blocks/0", 404, nil)

	mu.Lock()
	chains["c2"] = config.Chain{Type: config.ChainTypeEthereum, BlockTime: time.Second, StartHeight: 5}
	mu.Unlock()
	s := a.server
	require.NoError(t, s.refreshChains(context.Background()))
	a.getJSON(t, "/v1/chains", 200, &list)
	require.Equal(t, []string{"c1", "c2"}, []string{list.Chains[0].ID, list.Chains[1].ID})
	var e apiError
	a.getJSON(t, "/v1/chains/c2/blocks/0", 404, &e)
	require.Contains(t, e.Message, "below the chain's start height 5", "c2 is served now (and has no data)")

	mu.Lock()
	fail = errors.New("registry unreachable")
	mu.Unlock()
	require.Error(t, s.refreshChains(context.Background()))
	a.getJSON(t, "/v1/chains", 200, &list)
	require.Len(t, list.Chains, 2, "a failed read keeps the chains served")
}

// The status route reports what it could read: with the node down the head
// is null and the error says so without the node's URL; the watermark and
// the chain state are still there.
func TestStatusWithoutTheNode(t *testing.T) {
	const url = "http://user:secret-key@127.0.0.1:1/rpc"
	a := newTestAPI(t, config.API{}, func(o *Options) {
		ch := o.Chains[testChain]
		ch.Endpoints = map[string]string{"main": url}
		o.Chains[testChain] = ch
		o.Head = func(context.Context, string) (uint64, error) {
			return 0, errors.New("dial " + url + ": connection refused")
		}
	})
	a.write(t, sampleChain(3))
	require.NoError(t, a.store.SaveState(context.Background(), testChain, storage.StatePrunedHeight, 0))
	code, body := a.get(t, "/v1/chains/c1/status")
	require.Equal(t, 200, code)
	require.NotContains(t, string(body), "secret-key")
	var st Status
	require.NoError(t, json.Unmarshal(body, &st))
	require.Nil(t, st.Head)
	require.Nil(t, st.LagBlocks, "no head, no lag (not 0)")
	require.Nil(t, st.LagSeconds)
	require.Contains(t, string(body), `"lag_blocks":null`)
	require.Equal(t, uint64(2), *st.Watermark)
	require.Equal(t, uint64(0), *st.PrunedHeight)
	require.Nil(t, st.AggregatorHeight)
	require.Nil(t, st.Scheduler, "no Temporal client: no scheduler")
	require.Len(t, st.Errors, 2, "the head and the scheduler")
	require.Contains(t, st.Errors[0], "<redacted>")
}
