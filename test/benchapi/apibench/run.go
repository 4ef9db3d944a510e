// Package apibench is bench-api (`make bench-api`, issue 10): it indexes a
// simulated chain of N heights (pkg/simchain, default mix) with the worker
// on the real local stack (Temporal dev server, ClickHouse), then serves
// the query API on loopback and has package load send each route a bounded
// number of requests, a few at a time, with inputs drawn from the index
// (real heights, block and transaction hashes, addresses, contracts and
// topics). The output is per route requests/s and the p50, p99 and max
// latency, then one machine-readable line per route:
//
//	api: route=… requests=… concurrency=… rps=… p50_ms=… p99_ms=… max_ms=… errors=…
//
// errors counts answers other than 200. With Options.Dir the run's folder
// is kept (and reused by a later run with the same folder: an index already
// at N heights is not built again). README.md has the parts and the fields.
package apibench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime/pprof"
	"slices"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/tideline-dev/tideline/pkg/api"
	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/indexer/worker"
	"github.com/tideline-dev/tideline/pkg/localstack"
	"github.com/tideline-dev/tideline/pkg/rpc"
	"github.com/tideline-dev/tideline/pkg/simchain"
	"github.com/tideline-dev/tideline/pkg/storage"
	"github.com/tideline-dev/tideline/test/benchapi/load"
	"github.com/tideline-dev/tideline/test/internal/benchkit"
)

const (
	chainID  = "sim"
	database = "tideline_benchapi"
)

// Options are bench-api's flags.
type Options struct {
	N           uint64
	Requests    int
	Concurrency int
	Samples     int
	Timeout     time.Duration
	Dir         string
	Seed        uint64
	// Traces is the tracer the worker indexes call traces with (debug or
	// parity; empty: off); the trace routes are loaded when set.
	Traces string
	// Routes, when set, keeps only the routes whose name it matches (and
	// the mixed route is then made of those).
	Routes *regexp.Regexp
	// CPUProfile, when set, is where the CPU profile of the load is
	// written (this process: the API, the worker following the head, the
	// client).
	CPUProfile string
	// Warm, when set, reads the database's files once before the load
	// (warm.go), so the figures are the reads' and not the page cache's
	// history.
	Warm bool
	// Warmup is how many requests each route is sent first, untimed,
	// numbered after the measured ones (load.Run).
	Warmup int
}

// Run runs the benchmark and returns the process's exit code: 0 when every
// answer was a 200, 1 otherwise or when the run failed.
func Run(ctx context.Context, o Options) int {
	b := &bench{opts: o}
	code, err := b.run(ctx)
	b.cleanup.Run()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench-api:", err)
		return 1
	}
	return code
}

type bench struct {
	opts    Options
	out     benchkit.Printer
	cleanup benchkit.Cleanup
	store   *storage.ClickHouse
	conn    driver.Conn
}

func (b *bench) say(format string, args ...any) { b.out.Say(format, args...) }

func (b *bench) run(ctx context.Context) (int, error) {
	o := b.opts
	dir := o.Dir
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "tideline-benchapi-"); err != nil {
			return 0, err
		}
		b.cleanup.Add(func() { os.RemoveAll(dir) })
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	// A new Temporal database each time: a reused folder keeps only the
	// index.
	st, err := benchkit.StartStack(&b.cleanup, filepath.Join(dir, fmt.Sprintf("temporal-%d", time.Now().UnixNano())),
		filepath.Join(dir, "clickhouse"), localstack.TemporalOptions{NoUI: true})
	if err != nil {
		return 0, err
	}
	sc := simchain.DefaultConfig()
	sc.Seed, sc.Length = o.Seed, o.N
	sim, err := benchkit.StartSim(&b.cleanup, sc)
	if err != nil {
		return 0, err
	}
	b.say("bench-api: n=%d (simulated chain, %d txs/block, %g logs/tx) folder %s; ClickHouse %s, Temporal %s",
		o.N, sc.TxsPerBlock, sc.LogsPerTx, dir, st.ClickHouse.Addr, st.Temporal.HostPort)

	cfg := b.config(st.Temporal.HostPort, st.ClickHouse.Addr, sim.HTTPURL(), sc.ChainID)
	logFile, err := os.OpenFile(filepath.Join(dir, "worker.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, err
	}
	b.cleanup.Add(func() { logFile.Close() })
	log := zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(logFile), zapcore.WarnLevel))
	if b.store, err = worker.OpenStore(ctx, cfg.ClickHouse, zap.NewNop()); err != nil {
		return 0, err
	}
	b.cleanup.Add(func() { b.store.Close() })
	if err := b.store.Migrate(ctx); err != nil {
		return 0, err
	}
	if b.conn, err = benchkit.OpenConn(&b.cleanup, st.ClickHouse.Addr, database); err != nil {
		return 0, err
	}

	// The worker indexes the chain (and keeps following its head during
	// the load, as in production).
	wctx, wcancel := context.WithCancel(ctx)
	wdone := make(chan error, 1)
	go func() { wdone <- worker.Run(wctx, cfg, log) }()
	b.cleanup.Add(func() {
		wcancel()
		<-wdone
	})
	if err := b.waitIndexed(ctx, wdone); err != nil {
		return 0, err
	}
	if err := b.waitAggregated(ctx, wdone); err != nil {
		return 0, err
	}

	base, err := b.serveAPI(ctx, st, cfg, log)
	if err != nil {
		return 0, err
	}
	in, err := b.sample(ctx)
	if err != nil {
		return 0, err
	}
	rs := load.Routes(chainID, in)
	if o.Routes != nil {
		rs = slices.DeleteFunc(rs, func(r load.Route) bool { return !o.Routes.MatchString(r.Name) })
		if len(rs) == 0 {
			return 0, fmt.Errorf("no route's name matches -routes %q", o.Routes)
		}
	}
	if o.Warm {
		if err := b.warm(filepath.Join(dir, "clickhouse")); err != nil {
			return 0, err
		}
	}
	if o.CPUProfile != "" {
		f, err := os.Create(o.CPUProfile)
		if err != nil {
			return 0, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return 0, err
		}
		defer pprof.StopCPUProfile()
	}
	return load.Run(ctx, base, rs, o.Requests, o.Concurrency, o.Warmup), nil
}

// serveAPI serves the query API on a free loopback port, as `indexer api`
// would with the run's config but no rate limit, and returns its base URL.
func (b *bench) serveAPI(ctx context.Context, st *benchkit.Stack, cfg *config.Config, log *zap.Logger) (string, error) {
	tc, err := benchkit.DialTemporal(ctx, &b.cleanup, st.Temporal.HostPort)
	if err != nil {
		return "", err
	}
	reg := prometheus.NewRegistry()
	node, err := worker.NewChainClient(ctx, chainID, cfg.Chains[chainID], zap.NewNop(), rpc.NewMetrics(reg))
	if err != nil {
		return "", err
	}
	b.cleanup.Add(node.Close)
	apiCfg := config.DefaultAPI()
	apiCfg.Listen, apiCfg.RateLimit = "127.0.0.1:0", 0
	srv, err := api.New(api.Options{
		Config: apiCfg, Chains: cfg.Chains, Store: api.NewStore(b.store.Reader()), Temporal: tc, Registry: reg, Logger: log,
		Head: func(ctx context.Context, _ string) (uint64, error) { return node.HeadHeight(ctx) },
	})
	if err != nil {
		return "", err
	}
	l, err := srv.Listen()
	if err != nil {
		return "", err
	}
	sctx, scancel := context.WithCancel(context.Background())
	sdone := make(chan error, 1)
	go func() { sdone <- srv.Serve(sctx, l) }()
	b.cleanup.Add(func() {
		scancel()
		<-sdone
	})
	return "http://" + l.Addr().String(), nil
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
	if b.opts.Traces != "" {
		ch.Traces.Mode = b.opts.Traces
	}
	return &config.Config{
		Log:        config.Log{Format: "json", Level: "warn"},
		Temporal:   config.Temporal{HostPort: temporalAddr, Namespace: "default"},
		ClickHouse: config.ClickHouse{Addr: chAddr, Database: database, Username: "default", DialTimeout: 5 * time.Second, QueryTimeout: 5 * time.Minute},
		API:        config.DefaultAPI(),
		Registry:   config.Registry{PollInterval: 5 * time.Second},
		Chains:     map[string]config.Chain{chainID: ch},
	}
}
