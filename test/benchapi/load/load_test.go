package load

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestQuantileOfSortedLatencies(t *testing.T) {
	s := &stat{}
	require.Zero(t, s.quantile(0.99), "no samples")
	for i := 1; i <= 100; i++ {
		s.latencies = append(s.latencies, time.Duration(i)*time.Millisecond)
	}
	require.Equal(t, 50*time.Millisecond, s.quantile(0.5))
	require.Equal(t, 99*time.Millisecond, s.quantile(0.99))
	require.Equal(t, 100*time.Millisecond, s.quantile(1))
}

// The `api:` line's fields and order are what the performance tables are
// read from.
func TestLine(t *testing.T) {
	s := &stat{name: "block by hash", requests: 4, concurrency: 2, seconds: 0.5, errors: 1,
		latencies: []time.Duration{time.Millisecond, 2 * time.Millisecond, 3 * time.Millisecond, 40 * time.Millisecond},
		sizes:     []int{10, 200, 300, 4000}}
	require.Equal(t, `api: route="block by hash" requests=4 concurrency=2 rps=8 p50_ms=2.00 p99_ms=40.00 max_ms=40.00 errors=1 answer_bytes=200 answer_mib_s=0.09`, s.line(),
		"4,510 bytes in 46 ms of requests")
}

func TestFailedIn200(t *testing.T) {
	require.True(t, failedIn200("/v1/chains/sim/etherscan/api?module=x", []byte(`{"status":"0","message":"NOTOK"}`)))
	require.True(t, failedIn200("/v1/chains/sim/etherscan/api?module=proxy", []byte(`{"jsonrpc":"2.0","error":{"code":-32000}}`)))
	require.False(t, failedIn200("/v1/chains/sim/etherscan/api?module=x", []byte(`{"status":"1","message":"OK"}`)))
	require.True(t, failedIn200("/v1/chains/sim/rpc", []byte(`[{"jsonrpc":"2.0","id":1,"result":"0x1"},{"jsonrpc":"2.0","id":2,"error":{"code":-32005}}]`)),
		"one call of a batch failed")
	require.False(t, failedIn200("/v1/chains/sim/rpc", []byte(`{"jsonrpc":"2.0","id":1,"result":"0x1"}`)))
	require.False(t, failedIn200("/v1/chains/sim/status", []byte(`{"error":"x"}`)), "REST errors are told by status")
}

// measure counts every answer but a 200 (and an Etherscan error in a 200)
// as an error, and records a latency for each request.
func TestMeasureCountsErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/bad") {
			http.Error(w, "no", http.StatusNotFound)
			return
		}
		fmt.Fprint(w, `{"ok":true}`)
	}))
	defer srv.Close()
	s := measure(context.Background(), srv.Client(), srv.URL, "r", 10, 3, func(i int) (Route, int) {
		return Route{Name: "r", Path: func(i int) string {
			if i%5 == 0 {
				return "/bad"
			}
			return "/good"
		}}, i
	})
	require.Len(t, s.latencies, 10)
	require.Equal(t, 2, s.errors)
	require.Contains(t, s.firstError, "/bad: status 404")
}

// With a warm-up, each route is first sent that many requests numbered
// after the measured ones (from requests on), then its measured
// requests from input 0; without, only the one request that opens the
// connections comes first.
func TestRunWarmsEachRouteWithOtherInputs(t *testing.T) {
	for _, tc := range []struct {
		warmup int
		want   []string
	}{
		{0, []string{"a0", "b0", "a0", "a1", "a2", "b0", "b1", "b2"}},
		{2, []string{"a0", "b0", "a3", "a4", "a0", "a1", "a2", "b3", "b4", "b0", "b1", "b2"}},
	} {
		var mu sync.Mutex
		var got []string
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			got = append(got, strings.TrimPrefix(r.URL.Path, "/"))
			mu.Unlock()
			fmt.Fprint(w, `{"ok":true}`)
		}))
		route := func(name string) Route {
			return Route{Name: name, Path: func(i int) string { return fmt.Sprintf("/%s%d", name, i) }}
		}
		require.Zero(t, Run(context.Background(), srv.URL, []Route{route("a"), route("b")}, 3, 1, tc.warmup))
		srv.Close()
		require.Equal(t, tc.want, got[:len(tc.want)], "warmup %d", tc.warmup)
		require.Len(t, got, len(tc.want)+6, "then the mixed route's six")
	}
}

// Every route draws its path from the inputs without running off them.
func TestRoutesDrawFromInputs(t *testing.T) {
	in := &Inputs{Heights: []uint64{5, 700}, Times: []uint64{1700000000}, Blocks: []string{"0xb"}, Txs: []string{"0xt"},
		Addresses: []string{"0xa", "0xc"}, Logs: []LogInput{{Height: 3, Address: "0xl", Topic0: "0x0"}}}
	rs := Routes("sim", in)
	require.Len(t, rs, 19, "16 REST and Etherscan routes, 3 JSON-RPC (no log with two topics: no eth_getLogs)")
	for _, r := range rs {
		for i := range 5 {
			require.True(t, strings.HasPrefix(r.Path(i), "/v1/chains/sim/"), r.Name)
			if r.Body != nil {
				require.True(t, json.Valid([]byte(r.Body(i))), "%s: %s", r.Name, r.Body(i))
			}
		}
	}
	in.Logs[0].Topic1 = "0x1"
	rs = Routes("sim", in)
	require.Len(t, rs, 24, "and the five eth_getLogs routes")
	for _, r := range rs[19:] {
		require.True(t, json.Valid([]byte(r.Body(3))), "%s: %s", r.Name, r.Body(3))
	}
}
