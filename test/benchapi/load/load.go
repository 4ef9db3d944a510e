// Package load sends bench-api's requests to the query API and reports
// them: per route a bounded number of requests, a few at a time, each
// latency recorded; then a table (requests/s, p50, p99, max, errors) and
// one machine-readable `api:` line per route.
package load

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// stat is one route's measurement.
type stat struct {
	name        string
	requests    int
	seconds     float64
	latencies   []time.Duration
	sizes       []int // answer bodies' bytes
	errors      int
	firstError  string
	concurrency int
}

func (s *stat) quantile(q float64) time.Duration {
	if len(s.latencies) == 0 {
		return 0
	}
	i := int(q*float64(len(s.latencies)) + 0.5)
	return s.latencies[min(max(i-1, 0), len(s.latencies)-1)]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// medianSize is the median answer's bytes (sizes sorted).
func (s *stat) medianSize() int {
	if len(s.sizes) == 0 {
		return 0
	}
	return s.sizes[(len(s.sizes)-1)/2]
}

// Run sends every route its requests (requests each, concurrency in
// flight), one route after the other, then all routes mixed, to the API at
// base; it prints the table and the `api:` lines and returns the exit
// code: 0 when every answer was a 200. With warmup, each route is first
// sent warmup requests numbered after its measured ones (i from requests
// on, drawn from the inputs as they are, so a few may ask what a measured
// one asks, as measured ones repeat each other), neither timed nor
// counted: on a freshly started server a route's first
// requests fill its caches (marks, decompressed blocks of the look-up
// tables), and a p99 of 100 requests is their second slowest.
func Run(ctx context.Context, base string, rs []Route, requests, concurrency, warmup int) int {
	client := &http.Client{
		Timeout:   30 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: concurrency, DialContext: (&net.Dialer{}).DialContext},
	}
	// Warm the connections and the server's caches of chain state.
	for _, r := range rs {
		_, _, _ = fetch(ctx, client, base, r, 0)
	}
	var stats []*stat
	for _, r := range rs {
		if warmup > 0 {
			_ = measure(ctx, client, base, r.Name, warmup, concurrency, func(i int) (Route, int) { return r, requests + i })
		}
		s := measure(ctx, client, base, r.Name, requests, concurrency, func(i int) (Route, int) { return r, i })
		stats = append(stats, s)
	}
	mixed := measure(ctx, client, base, "mixed (all routes)", requests*2, concurrency, func(i int) (Route, int) {
		return rs[i%len(rs)], i / len(rs)
	})
	stats = append(stats, mixed)

	fmt.Printf("\n%-38s %9s %9s %9s %9s %7s %11s\n", "route", "req/s", "p50 ms", "p99 ms", "max ms", "errors", "answer B")
	code := 0
	for _, s := range stats {
		fmt.Printf("%-38s %9.0f %9.2f %9.2f %9.2f %7d %11d\n", s.name, float64(s.requests)/s.seconds,
			ms(s.quantile(0.5)), ms(s.quantile(0.99)), ms(s.quantile(1)), s.errors, s.medianSize())
		if s.errors > 0 {
			fmt.Printf("    first error: %s\n", s.firstError)
			code = 1
		}
	}
	fmt.Println()
	for _, s := range stats {
		fmt.Println(s.line())
	}
	return code
}

// line is the route's machine-readable line; its fields and their order
// are what docs/performance.md's tables are read from (answer_bytes, the
// median answer's size, and answer_mib_s, the bytes answered per second
// of the requests' own time, came last, so older lines still read).
func (s *stat) line() string {
	return fmt.Sprintf("api: route=%q requests=%d concurrency=%d rps=%.0f p50_ms=%.2f p99_ms=%.2f max_ms=%.2f errors=%d answer_bytes=%d answer_mib_s=%.2f",
		s.name, s.requests, s.concurrency, float64(s.requests)/s.seconds, ms(s.quantile(0.5)), ms(s.quantile(0.99)),
		ms(s.quantile(1)), s.errors, s.medianSize(), s.answerRate())
}

// answerRate is the answers' bytes per second of the time spent waiting
// for them, in MiB/s: the rate a large answer (eth_getLogs of thousands
// of logs) is served at, where its latency says more about its size.
func (s *stat) answerRate() float64 {
	var bytes, secs float64
	for _, b := range s.sizes {
		bytes += float64(b)
	}
	for _, l := range s.latencies {
		secs += l.Seconds()
	}
	if secs == 0 {
		return 0
	}
	return bytes / secs / (1 << 20)
}

// measure sends requests with concurrency workers and records each
// latency.
func measure(ctx context.Context, client *http.Client, base, name string, requests, concurrency int, nth func(int) (Route, int)) *stat {
	s := &stat{name: name, requests: requests, concurrency: concurrency}
	var mu sync.Mutex
	next := make(chan int)
	var wg sync.WaitGroup
	start := time.Now()
	for range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				r, j := nth(i)
				t := time.Now()
				status, body, err := fetch(ctx, client, base, r, j)
				if err == nil && status == http.StatusOK && failedIn200(r.Path(j), body) {
					status = -1
				}
				d := time.Since(t)
				mu.Lock()
				s.latencies = append(s.latencies, d)
				s.sizes = append(s.sizes, len(body))
				if err != nil || status != http.StatusOK {
					s.errors++
					if s.firstError == "" {
						s.firstError = fmt.Sprintf("%s: status %d %v: %.200s", r.Path(j), status, err, body)
					}
				}
				mu.Unlock()
			}
		}()
	}
	for i := range requests {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	s.seconds = time.Since(start).Seconds()
	slices.Sort(s.latencies)
	slices.Sort(s.sizes)
	return s
}

// failedIn200 tells an Etherscan or JSON-RPC answer that is an error in
// HTTP 200 clothing (NOTOK, a JSON-RPC error) from a real one.
func failedIn200(path string, body []byte) bool {
	switch {
	case strings.Contains(path, "/etherscan/"):
		return strings.Contains(string(body), `"NOTOK"`) || strings.Contains(string(body), `"error":`)
	case strings.HasSuffix(path, "/rpc"):
		return strings.Contains(string(body), `"error":`)
	}
	return false
}

// fetch sends route r's j-th request: a GET of its path, or a POST of its
// body.
func fetch(ctx context.Context, client *http.Client, base string, r Route, j int) (int, []byte, error) {
	method, send := http.MethodGet, io.Reader(nil)
	if r.Body != nil {
		method, send = http.MethodPost, strings.NewReader(r.Body(j))
	}
	req, err := http.NewRequestWithContext(ctx, method, base+r.Path(j), send)
	if err != nil {
		return 0, nil, err
	}
	if r.Body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}
