// Command benchapi measures the query API (`make bench-api`): it indexes a
// simulated chain of N heights (pkg/simchain, default mix) with the worker
// on the real local stack (Temporal dev server, ClickHouse), then serves
// the API on loopback and sends each route a bounded number of requests,
// a few at a time, with inputs drawn from the index (real heights, block
// and transaction hashes, addresses, contracts and topics). It prints per
// route requests/s and the p50, p99 and max latency, then one
// machine-readable line per route:
//
//	api: route=… requests=… concurrency=… rps=… p50_ms=… p99_ms=… max_ms=… errors=…
//
// errors counts answers other than 200. With -dir the run's folder is kept
// (and reused by a later run with the same -dir: an index already at N
// heights is not built again). Exit code 0 when every answer was a 200.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/tideline-dev/tideline/pkg/api"
	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/indexer/worker"
	"github.com/tideline-dev/tideline/pkg/localstack"
	"github.com/tideline-dev/tideline/pkg/rpc"
	"github.com/tideline-dev/tideline/pkg/simchain"
	"github.com/tideline-dev/tideline/pkg/storage"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

const (
	chainID  = "sim"
	database = "tideline_benchapi"
)

type options struct {
	n           uint64
	requests    int
	concurrency int
	samples     int
	timeout     time.Duration
	dir         string
	seed        uint64
}

func main() { os.Exit(run()) }

func run() int {
	var o options
	flag.Uint64Var(&o.n, "n", 100_000, "heights of the simulated chain to index (0..n)")
	flag.IntVar(&o.requests, "requests", 2000, "requests per route")
	flag.IntVar(&o.concurrency, "concurrency", 8, "requests in flight at once")
	flag.IntVar(&o.samples, "samples", 500, "inputs drawn from the index per kind (heights, hashes, addresses)")
	flag.DurationVar(&o.timeout, "timeout", 60*time.Minute, "give up indexing after this long")
	flag.StringVar(&o.dir, "dir", "", "the run's folder, kept and reused (default: a new temporary one, removed)")
	flag.Uint64Var(&o.seed, "seed", 1, "seed of the simulated chain and of the inputs")
	flag.Parse()
	if o.n == 0 || o.requests < 1 || o.concurrency < 1 || o.samples < 1 {
		fmt.Fprintln(os.Stderr, "bench-api: -n, -requests, -concurrency and -samples must be positive")
		return 64
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	b := &bench{opts: o}
	code, err := b.run(ctx)
	b.cleanup()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench-api:", err)
		return 1
	}
	return code
}

type bench struct {
	opts    options
	closers []func()
	store   *storage.ClickHouse
	conn    driver.Conn
}

func (b *bench) onStop(f func()) { b.closers = append(b.closers, f) }

func (b *bench) cleanup() {
	for i := len(b.closers) - 1; i >= 0; i-- {
		b.closers[i]()
	}
}

func say(format string, args ...any) {
	fmt.Printf("%s  %s\n", time.Now().UTC().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func (b *bench) run(ctx context.Context) (int, error) {
	o := b.opts
	dir := o.dir
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "tideline-benchapi-"); err != nil {
			return 0, err
		}
		b.onStop(func() { os.RemoveAll(dir) })
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	tmp, err := localstack.StartTemporal(filepath.Join(dir, fmt.Sprintf("temporal-%d", time.Now().UnixNano())), localstack.TemporalOptions{NoUI: true})
	if err != nil {
		return 0, fmt.Errorf("start temporal: %w", err)
	}
	b.onStop(tmp.Stop)
	ch, err := localstack.StartClickHouse(filepath.Join(dir, "clickhouse"))
	if err != nil {
		return 0, fmt.Errorf("start clickhouse: %w", err)
	}
	b.onStop(ch.Stop)
	sc := simchain.DefaultConfig()
	sc.Seed, sc.Length = o.seed, o.n
	sim, err := simchain.Start(context.Background(), sc)
	if err != nil {
		return 0, err
	}
	b.onStop(func() { sim.Close() })
	say("bench-api: n=%d (simulated chain, %d txs/block, %g logs/tx) folder %s; ClickHouse %s, Temporal %s",
		o.n, sc.TxsPerBlock, sc.LogsPerTx, dir, ch.Addr, tmp.HostPort)

	cfg := b.config(tmp.HostPort, ch.Addr, sim.HTTPURL(), sc.ChainID)
	logFile, err := os.OpenFile(filepath.Join(dir, "worker.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, err
	}
	b.onStop(func() { logFile.Close() })
	log := zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(logFile), zapcore.WarnLevel))
	if b.store, err = worker.OpenStore(ctx, cfg.ClickHouse, zap.NewNop()); err != nil {
		return 0, err
	}
	b.onStop(func() { b.store.Close() })
	if err := b.store.Migrate(ctx); err != nil {
		return 0, err
	}
	if b.conn, err = clickhouse.Open(&clickhouse.Options{Addr: []string{ch.Addr}, Auth: clickhouse.Auth{Database: database},
		ReadTimeout: 10 * time.Minute}); err != nil {
		return 0, err
	}
	b.onStop(func() { b.conn.Close() })

	// The worker indexes the chain (and keeps following its head during
	// the load, as in production).
	wctx, wcancel := context.WithCancel(ctx)
	wdone := make(chan error, 1)
	go func() { wdone <- worker.Run(wctx, cfg, log) }()
	b.onStop(func() {
		wcancel()
		<-wdone
	})
	if err := b.waitIndexed(ctx, wdone); err != nil {
		return 0, err
	}
	if err := b.waitAggregated(ctx, wdone); err != nil {
		return 0, err
	}

	tc, err := client.Dial(client.Options{HostPort: tmp.HostPort, Namespace: "default", Logger: temporal.NewLogger(zap.NewNop())})
	if err != nil {
		return 0, err
	}
	b.onStop(tc.Close)
	reg := prometheus.NewRegistry()
	node, err := worker.NewChainClient(ctx, chainID, cfg.Chains[chainID], zap.NewNop(), rpc.NewMetrics(reg))
	if err != nil {
		return 0, err
	}
	b.onStop(node.Close)
	apiCfg := config.DefaultAPI()
	apiCfg.Listen, apiCfg.RateLimit = "127.0.0.1:0", 0
	srv, err := api.New(api.Options{
		Config: apiCfg, Chains: cfg.Chains, Store: b.store, Temporal: tc, Registry: reg, Logger: log,
		Head: func(ctx context.Context, _ string) (uint64, error) { return node.HeadHeight(ctx) },
	})
	if err != nil {
		return 0, err
	}
	l, err := srv.Listen()
	if err != nil {
		return 0, err
	}
	sctx, scancel := context.WithCancel(context.Background())
	sdone := make(chan error, 1)
	go func() { sdone <- srv.Serve(sctx, l) }()
	b.onStop(func() {
		scancel()
		<-sdone
	})
	in, err := b.sample(ctx)
	if err != nil {
		return 0, err
	}
	return b.load(ctx, "http://"+l.Addr().String(), in), nil
}

// config is the worker's and the API's configuration: the indexer's
// defaults with the simulated chain's endpoint and no rate limit on it.
func (b *bench) config(temporalAddr, chAddr, nodeURL string, evmChainID uint64) *config.Config {
	ch := config.DefaultChain()
	ch.BlockTime = 2 * time.Second
	ch.Endpoints = map[string]string{"sim": nodeURL}
	ch.ExpectedChainID = evmChainID
	ch.RPC.RateLimit = 0
	ch.HeadScan.Interval = 2 * time.Second
	return &config.Config{
		Log:        config.Log{Format: "json", Level: "warn"},
		Temporal:   config.Temporal{HostPort: temporalAddr, Namespace: "default"},
		ClickHouse: config.ClickHouse{Addr: chAddr, Database: database, Username: "default", DialTimeout: 5 * time.Second, QueryTimeout: 5 * time.Minute},
		API:        config.DefaultAPI(),
		Registry:   config.Registry{PollInterval: 5 * time.Second},
		Chains:     map[string]config.Chain{chainID: ch},
	}
}

// waitIndexed waits until every height 0..n is indexed.
func (b *bench) waitIndexed(ctx context.Context, wdone <-chan error) error {
	start := time.Now()
	deadline := start.Add(b.opts.timeout)
	last := time.Time{}
	for {
		st, err := b.store.ReadState(ctx, chainID)
		if err != nil {
			return err
		}
		wm, found, err := b.store.ReadWatermark(ctx, chainID, 0, st)
		if err != nil {
			return err
		}
		if found && wm >= b.opts.n {
			say("indexed: watermark %d after %.0fs", wm, time.Since(start).Seconds())
			return nil
		}
		if time.Since(last) > 15*time.Second {
			say("indexing: watermark %d (found %v) of %d", wm, found, b.opts.n)
			last = time.Now()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("watermark %d after %s, not %d", wm, b.opts.timeout, b.opts.n)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-wdone:
			return fmt.Errorf("the worker stopped: %v", err)
		case <-time.After(2 * time.Second):
		}
	}
}

// waitAggregated waits until the worker's aggregator has counted every
// height 0..n, so the stats route answers from its rows.
func (b *bench) waitAggregated(ctx context.Context, wdone <-chan error) error {
	start := time.Now()
	deadline := start.Add(b.opts.timeout)
	for {
		h, ok, err := b.store.LoadState(ctx, chainID, storage.StateAggregatorHeight)
		if err != nil {
			return err
		}
		if ok && h >= b.opts.n {
			say("aggregated: aggregator_height %d after %.0fs", h, time.Since(start).Seconds())
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("aggregator_height %d (saved: %v) after %s, not %d", h, ok, b.opts.timeout, b.opts.n)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-wdone:
			return fmt.Errorf("the worker stopped: %v", err)
		case <-time.After(2 * time.Second):
		}
	}
}

// inputs are drawn from the index.
type inputs struct {
	heights   []uint64
	times     []uint64
	blocks    []string // block hashes
	txs       []string // transaction hashes
	addresses []string // senders and recipients
	logs      []logInput
}

type logInput struct {
	height  uint64
	address string
	topic0  string
}

func (b *bench) sample(ctx context.Context) (*inputs, error) {
	r := rand.New(rand.NewPCG(b.opts.seed, 99))
	in := &inputs{}
	for range b.opts.samples {
		in.heights = append(in.heights, r.Uint64N(b.opts.n+1))
	}
	list := make([]string, len(in.heights))
	for i, h := range in.heights {
		list[i] = fmt.Sprint(h)
	}
	where := "chain_id = '" + chainID + "' AND %s IN (" + strings.Join(list, ",") + ")"
	scan := func(sql string, f func(driver.Rows) error) error {
		rows, err := b.conn.Query(ctx, sql)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			if err := f(rows); err != nil {
				return err
			}
		}
		return rows.Err()
	}
	if err := scan("SELECT hash, toUInt32(timestamp) FROM blocks WHERE "+fmt.Sprintf(where, "number"), func(r driver.Rows) error {
		var h string
		var ts uint32
		err := r.Scan(&h, &ts)
		in.blocks, in.times = append(in.blocks, h), append(in.times, uint64(ts))
		return err
	}); err != nil {
		return nil, err
	}
	if err := scan("SELECT hash, from_address, to_address FROM transactions WHERE "+fmt.Sprintf(where, "block_number")+
		" AND tx_index = 0", func(r driver.Rows) error {
		var h, from, to string
		err := r.Scan(&h, &from, &to)
		in.txs = append(in.txs, h)
		in.addresses = append(in.addresses, from)
		if to != "" {
			in.addresses = append(in.addresses, to)
		}
		return err
	}); err != nil {
		return nil, err
	}
	if err := scan("SELECT block_number, address, topic0 FROM logs WHERE "+fmt.Sprintf(where, "block_number")+
		" AND log_index = 0 AND topic_count > 0", func(r driver.Rows) error {
		var l logInput
		err := r.Scan(&l.height, &l.address, &l.topic0)
		in.logs = append(in.logs, l)
		return err
	}); err != nil {
		return nil, err
	}
	if len(in.blocks) == 0 || len(in.txs) == 0 || len(in.logs) == 0 {
		return nil, fmt.Errorf("no inputs drawn: %d blocks, %d transactions, %d logs", len(in.blocks), len(in.txs), len(in.logs))
	}
	say("inputs: %d heights, %d block hashes, %d transaction hashes, %d addresses, %d log filters",
		len(in.heights), len(in.blocks), len(in.txs), len(in.addresses), len(in.logs))
	return in, nil
}

// route is a named request generator.
type route struct {
	name string
	path func(i int) string
}

func routes(in *inputs) []route {
	pick := func(i, n int) int { return (i * 7919) % n }
	c := "/v1/chains/" + chainID
	es := c + "/etherscan/api?"
	return []route{
		{"block by height", func(i int) string { return fmt.Sprintf("%s/blocks/%d", c, in.heights[pick(i, len(in.heights))]) }},
		{"block by hash", func(i int) string { return c + "/blocks/hash/" + in.blocks[pick(i, len(in.blocks))] }},
		{"transaction by hash", func(i int) string { return c + "/txs/" + in.txs[pick(i, len(in.txs))] }},
		{"address transactions", func(i int) string {
			return c + "/addresses/" + in.addresses[pick(i, len(in.addresses))] + "/txs?limit=25"
		}},
		{"block transactions", func(i int) string {
			return fmt.Sprintf("%s/blocks/%d/txs?limit=25", c, in.heights[pick(i, len(in.heights))])
		}},
		{"blocks by height range", func(i int) string {
			return fmt.Sprintf("%s/blocks?from=%d&limit=25", c, in.heights[pick(i, len(in.heights))])
		}},
		{"blocks by time range", func(i int) string {
			t := in.times[pick(i, len(in.times))]
			return fmt.Sprintf("%s/blocks?from_time=%d&to_time=%d&limit=25", c, t, t+60)
		}},
		{"logs (address, topic0, 1000 heights)", func(i int) string {
			l := in.logs[pick(i, len(in.logs))]
			from := l.height - min(l.height, 500)
			return fmt.Sprintf("%s/logs?from=%d&to=%d&address=%s&topic0=%s&limit=100", c, from, from+999, l.address, l.topic0)
		}},
		{"logs (block range of 10)", func(i int) string {
			h := in.heights[pick(i, len(in.heights))]
			return fmt.Sprintf("%s/logs?from=%d&to=%d&limit=100", c, h-min(h, 9), h)
		}},
		{"stats", func(i int) string {
			h := in.heights[pick(i, len(in.heights))]
			return fmt.Sprintf("%s/stats?from=%d&to=%d", c, h/2, h)
		}},
		{"status", func(int) string { return c + "/status" }},
		{"etherscan txlist", func(i int) string {
			return es + "module=account&action=txlist&page=1&offset=25&sort=desc&address=" + in.addresses[pick(i, len(in.addresses))]
		}},
		{"etherscan getLogs", func(i int) string {
			l := in.logs[pick(i, len(in.logs))]
			from := l.height - min(l.height, 500)
			return fmt.Sprintf("%smodule=logs&action=getLogs&fromBlock=%d&toBlock=%d&address=%s&topic0=%s&page=1&offset=100",
				es, from, from+999, l.address, l.topic0)
		}},
		{"etherscan getblocknobytime", func(i int) string {
			return fmt.Sprintf("%smodule=block&action=getblocknobytime&closest=before&timestamp=%d", es, in.times[pick(i, len(in.times))]+1)
		}},
		{"etherscan eth_getBlockByNumber", func(i int) string {
			return fmt.Sprintf("%smodule=proxy&action=eth_getBlockByNumber&boolean=true&tag=0x%x", es, in.heights[pick(i, len(in.heights))])
		}},
		{"etherscan eth_getTransactionReceipt", func(i int) string {
			return es + "module=proxy&action=eth_getTransactionReceipt&txhash=" + in.txs[pick(i, len(in.txs))]
		}},
	}
}

// stat is one route's measurement.
type stat struct {
	name        string
	requests    int
	seconds     float64
	latencies   []time.Duration
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

// load sends every route its requests, one route after the other, then
// all routes mixed; it returns the exit code.
func (b *bench) load(ctx context.Context, base string, in *inputs) int {
	o := b.opts
	client := &http.Client{
		Timeout:   30 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: o.concurrency, DialContext: (&net.Dialer{}).DialContext},
	}
	rs := routes(in)
	// Warm the connections and the server's caches of chain state.
	for _, r := range rs {
		_, _, _ = fetch(ctx, client, base+r.path(0))
	}
	var stats []*stat
	for _, r := range rs {
		s := measure(ctx, client, base, r.name, o.requests, o.concurrency, r.path)
		stats = append(stats, s)
	}
	mixed := measure(ctx, client, base, "mixed (all routes)", o.requests*2, o.concurrency, func(i int) string {
		return rs[i%len(rs)].path(i / len(rs))
	})
	stats = append(stats, mixed)

	fmt.Printf("\n%-38s %9s %9s %9s %9s %7s\n", "route", "req/s", "p50 ms", "p99 ms", "max ms", "errors")
	code := 0
	for _, s := range stats {
		fmt.Printf("%-38s %9.0f %9.2f %9.2f %9.2f %7d\n", s.name, float64(s.requests)/s.seconds,
			ms(s.quantile(0.5)), ms(s.quantile(0.99)), ms(s.quantile(1)), s.errors)
		if s.errors > 0 {
			fmt.Printf("    first error: %s\n", s.firstError)
			code = 1
		}
	}
	fmt.Println()
	for _, s := range stats {
		fmt.Printf("api: route=%q requests=%d concurrency=%d rps=%.0f p50_ms=%.2f p99_ms=%.2f max_ms=%.2f errors=%d\n",
			s.name, s.requests, s.concurrency, float64(s.requests)/s.seconds, ms(s.quantile(0.5)), ms(s.quantile(0.99)),
			ms(s.quantile(1)), s.errors)
	}
	return code
}

// measure sends requests with concurrency workers and records each
// latency.
func measure(ctx context.Context, client *http.Client, base, name string, requests, concurrency int, path func(int) string) *stat {
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
				t := time.Now()
				status, body, err := fetch(ctx, client, base+path(i))
				if err == nil && status == http.StatusOK && etherscanFailed(path(i), body) {
					status = -1
				}
				d := time.Since(t)
				mu.Lock()
				s.latencies = append(s.latencies, d)
				if err != nil || status != http.StatusOK {
					s.errors++
					if s.firstError == "" {
						s.firstError = fmt.Sprintf("%s: status %d %v", path(i), status, err)
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
	return s
}

// etherscanFailed tells an Etherscan answer that is an error in HTTP 200
// clothing (NOTOK, a JSON-RPC error) from a real one.
func etherscanFailed(path string, body []byte) bool {
	return strings.Contains(path, "/etherscan/") &&
		(strings.Contains(string(body), `"NOTOK"`) || strings.Contains(string(body), `"error":`))
}

func fetch(ctx context.Context, client *http.Client, url string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}
