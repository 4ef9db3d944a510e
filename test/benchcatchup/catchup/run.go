// Package catchup is bench-catchup (`make bench-catchup`, issue 8): it
// measures a catch-up end to end on the real local stack. The Temporal dev
// server and ClickHouse are started as the integration tests start them, a
// simulated chain (pkg/simchain, in this process) N heights ahead of an
// empty database grows at its block time, and the indexer worker runs as a
// subprocess built from ./app/indexer with a generated config. The run
// lasts until the watermark reaches the chain's live edge (the head, less
// the blocks of one head-scan interval that the live path may still be
// indexing: with 2 s blocks, the newest one), printing a line per phase and
// a status line every 10 s, then checks the database against the chain and
// ends with one machine-readable line:
//
//	catchup: n=… heights_per_s=… txs_per_s=… rows_per_s=… lag_p95_blocks=… lag_max_blocks=… missing=… duplicates=… workflows=… peak_rss_mb=… ch_ms=… worker_ms=… temporal_ms=… disk_peak_gb=… disk_end_gb=… live_gb=… merge_amplification=… trace_bytes_per_height=… trace_bytes_per_frame=…
//
// Fields:
//   - n: heights of the catch-up, [0, the watermark when it reached the
//     live edge] (on a timeout: the heights indexed by then);
//   - heights_per_s, txs_per_s, rows_per_s: n, its transactions and its
//     rows (blocks + transactions + logs, as the chain defines them) over
//     the time from the worker's start to the watermark reaching the live
//     edge;
//   - lag_p95_blocks, lag_max_blocks: sampled every second from the first
//     indexed height to the end, head of the chain minus the newest indexed
//     height (max over indexed_heights), nearest-rank p95 and max;
//   - missing: heights in [0, head at the end] whose canonical rows
//     (FINAL, is_canonical = 1) are not exactly the chain's block: hash,
//     the block's counts, and that many transaction and log rows, all of
//     that block hash;
//   - duplicates: extra writes of heights, see verify.Duplicates;
//   - workflows: workflow executions on the (fresh) dev server, counted
//     through the visibility API, -1 if it did not answer;
//   - peak_rss_mb: the worker process's VmHWM, MiB;
//   - ch_ms, worker_ms, temporal_ms: CPU milliseconds per height of
//     ClickHouse, the worker and the Temporal dev server, from their start
//     to the worker's stop;
//   - disk_peak_gb, disk_end_gb: ClickHouse's data directory (allocated
//     blocks, as du counts), the largest of the walks every 10 s from the
//     worker's start to the end of the check, and the last walk's;
//   - live_gb: the active parts of the bench's database at the end;
//   - merge_amplification: bytes merges wrote / bytes inserted in the
//     bench's database (system.part_log);
//   - trace_bytes_per_height, trace_bytes_per_frame: the active parts of
//     the trace tables (traces, address_traces) per height and per call
//     frame stored; -1 when the run traced nothing.
//
// Fields that could not be measured print -1.
//
// Run's exit code is 0 for an exact catch-up (missing=0, duplicates=0), 1
// otherwise, 2 on the timeout, 130 when interrupted; everything started is
// stopped in every case. README.md has the parts and the phases.
package catchup

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/localstack"
	"github.com/tideline-dev/tideline/pkg/simchain"
	"github.com/tideline-dev/tideline/pkg/storage"
	"github.com/tideline-dev/tideline/pkg/temporal"
	"github.com/tideline-dev/tideline/test/benchcatchup/workerconfig"
	"github.com/tideline-dev/tideline/test/internal/benchkit"
)

const (
	chainID  = "sim"
	database = "tideline_bench"
	// statusEvery is the period of the status line.
	statusEvery = 10 * time.Second
	// settleTimeout bounds each wait after the catch-up (the last live
	// heights, the scheduler's end, the counters standing still).
	settleTimeout = 2 * time.Minute
)

// Options are bench-catchup's flags.
type Options struct {
	N         uint64
	Txs       int
	Logs      float64
	BlockTime time.Duration
	RangeSize int  // -1: leave scheduler.range_size out
	Push      bool // follow the new heads over the websocket endpoint
	Poll      bool // follow them by polling the http endpoint
	// CallsPerTx and TraceLatency are the simulated chain's trace knobs
	// (the worker traces with -set traces=debug or parity).
	CallsPerTx   float64
	TraceLatency time.Duration
	Sets         workerconfig.Overrides
	// OldPartsLifetime is the ClickHouse server's old_parts_lifetime;
	// zero keeps the server's default (8 minutes).
	OldPartsLifetime time.Duration
	Timeout          time.Duration
	Seed             uint64
	LogLevel         string
	Keep             bool
	CPUProfile       string
	CPUSeconds       int
}

// Run runs one catch-up and returns the process's exit code. The
// `catchup:` line is the last line it writes to stdout.
func Run(ctx context.Context, o Options) int {
	b := &bench{opts: o, out: benchkit.Printer{Elapsed: true}}
	res, err := b.run(ctx)
	b.cleanup.Run()
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintln(os.Stderr, "bench-catchup: interrupted; everything started was stopped")
			if b.dir != "" {
				fmt.Fprintln(os.Stderr, "bench-catchup: logs kept in", b.dir)
			}
			return 130
		}
		fmt.Fprintln(os.Stderr, "bench-catchup:", err)
		if b.dir != "" {
			fmt.Fprintln(os.Stderr, "bench-catchup: logs kept in", b.dir)
		}
		return 1
	}
	keep := b.dir != "" && (o.Keep || res.exitCode() != 0)
	if keep {
		b.say("run folder kept: %s", b.dir)
	}
	fmt.Println(res.line())
	// After the line, which stays the last one on stdout: removing the
	// many small files of ClickHouse's parts takes a while on a busy disk.
	if !keep && b.dir != "" {
		fmt.Fprintln(os.Stderr, "bench-catchup: removing", b.dir)
		os.RemoveAll(b.dir)
	}
	return res.exitCode()
}

// bench is one run: what it started (to stop in reverse order) and what it
// measures.
type bench struct {
	opts    Options
	out     benchkit.Printer
	dir     string
	cleanup benchkit.Cleanup

	sim     *simchain.Sim
	clock   *freezableClock
	worker  *localstack.Process
	servers map[string]*localstack.Process // by name, for the CPU line
	metrics string                         // the worker's metrics listener
	tc      client.Client
	store   *storage.ClickHouse
	conn    driver.Conn

	workerStart time.Time
	peakRSS     atomic.Uint64 // KiB
	disk        *diskSampler  // ClickHouse's data directory
}

func (b *bench) say(format string, args ...any) { b.out.Say(format, args...) }

// run sets the run up (the stack, the chain, the worker) and measures it.
func (b *bench) run(ctx context.Context) (result, error) {
	o := b.opts
	if dropped := dropTidelineEnv(); len(dropped) > 0 {
		b.say("ignoring %s: the worker gets its whole config from the generated file", strings.Join(dropped, ", "))
	}
	root, err := repoRoot()
	if err != nil {
		return result{}, err
	}
	if b.dir, err = os.MkdirTemp("", "tideline-bench-"); err != nil {
		return result{}, err
	}
	b.say("bench-catchup: n=%d txs=%d logs=%g block_time=%s range=%s push=%v poll=%v set=%q old_parts_lifetime=%s (folder %s)",
		o.N, o.Txs, o.Logs, o.BlockTime, rangeText(o.RangeSize), o.Push, o.Poll, []string(o.Sets), lifetimeText(o.OldPartsLifetime), b.dir)

	t := time.Now()
	bin, err := buildIndexer(ctx, root, b.dir)
	if err != nil {
		return result{}, err
	}
	b.say("built ./app/indexer in %.1fs", time.Since(t).Seconds())

	t = time.Now()
	// The part log gives the bytes merges rewrote (merge_amplification).
	st, err := benchkit.StartStackWith(&b.cleanup, filepath.Join(b.dir, "temporal"), filepath.Join(b.dir, "clickhouse"),
		localstack.TemporalOptions{NoUI: true, SearchAttributes: temporal.SearchAttributeSpecs()},
		localstack.ClickHouseOptions{PartLog: true, OldPartsLifetime: o.OldPartsLifetime})
	if err != nil {
		return result{}, err
	}
	// The server's <path>: every database's parts and metadata.
	b.disk = newDiskSampler(filepath.Join(st.ClickHouse.Dir, "data"))
	b.servers = st.Processes()
	b.say("Temporal dev server on %s, ClickHouse on %s (%.1fs)", st.Temporal.HostPort, st.ClickHouse.Addr, time.Since(t).Seconds())

	b.clock = &freezableClock{}
	sc := simchain.DefaultConfig()
	sc.Seed = o.Seed
	sc.Length = o.N
	sc.BlockTime = o.BlockTime
	sc.TxsPerBlock = o.Txs
	sc.LogsPerTx = o.Logs
	sc.CallsPerTx = o.CallsPerTx
	sc.TraceLatency = o.TraceLatency
	sc.Now = b.clock.Now
	if b.sim, err = benchkit.StartSim(&b.cleanup, sc); err != nil {
		return result{}, err
	}
	b.say("simulated chain on %s: head %d, %d txs/block, %g logs/tx, a block every %s", b.sim.HTTPURL(), b.sim.Head(), o.Txs, o.Logs, o.BlockTime)

	cfgPath, err := b.writeConfig(st, sc.ChainID)
	if err != nil {
		return result{}, err
	}
	if b.tc, err = benchkit.DialTemporal(ctx, &b.cleanup, st.Temporal.HostPort); err != nil {
		return result{}, err
	}

	// The clock starts with the worker process: its start-up (connecting,
	// migrating the empty database) is part of a catch-up.
	if b.worker, err = startWorker(bin, cfgPath, b.dir); err != nil {
		return result{}, err
	}
	b.workerStart = time.Now()
	b.out.Start(b.workerStart)
	b.cleanup.Add(b.worker.Stop)
	b.disk.start(ctx)
	b.cleanup.Add(b.disk.halt)
	b.say("worker started (pid %d, config %s, log %s)", b.worker.Pid(), cfgPath, b.worker.LogPath)
	if err := b.waitWorkerReady(ctx); err != nil {
		return result{}, err
	}
	if err := b.openDatabase(ctx, st.ClickHouse.Addr); err != nil {
		return result{}, err
	}
	return b.measure(ctx)
}

// writeConfig writes the worker's config into the run's folder, with a
// free port for its metrics listener, and returns the file's path.
func (b *bench) writeConfig(st *benchkit.Stack, evmChainID uint64) (string, error) {
	o := b.opts
	port, err := localstack.FreePort()
	if err != nil {
		return "", err
	}
	b.metrics = fmt.Sprintf("127.0.0.1:%d", port)
	wc := workerconfig.Config{
		ChainID: chainID, EVMChainID: evmChainID, BlockTime: o.BlockTime, HTTPURL: b.sim.HTTPURL(), WSURL: b.sim.WSURL(), Push: o.Push, Poll: o.Poll,
		TemporalHostPort: st.Temporal.HostPort, ClickHouseAddr: st.ClickHouse.Addr, Database: database,
		MetricsListen: b.metrics, LogLevel: o.LogLevel, Overrides: o.Sets,
	}
	if o.RangeSize >= 0 {
		wc.RangeSize = &o.RangeSize
	}
	yml, err := workerconfig.YAML(wc)
	if err != nil {
		return "", err
	}
	cfgPath := filepath.Join(b.dir, "worker.yaml")
	if err := os.WriteFile(cfgPath, yml, 0o644); err != nil {
		return "", err
	}
	return cfgPath, nil
}

func rangeText(n int) string {
	if n < 0 {
		return "(indexer default)"
	}
	return fmt.Sprint(n)
}

// openDatabase opens the indexer's own store (watermark, indexed heights)
// and a plain connection for the check.
func (b *bench) openDatabase(ctx context.Context, addr string) error {
	var err error
	b.store, err = storage.Open(ctx, config.ClickHouse{
		Addr: addr, Database: database, Username: "default",
		DialTimeout: 5 * time.Second, QueryTimeout: 5 * time.Minute,
	}, zap.NewNop())
	if err != nil {
		return fmt.Errorf("open the database: %w", err)
	}
	b.cleanup.Add(func() { b.store.Close() })
	b.conn, err = benchkit.OpenConn(&b.cleanup, addr, database)
	return err
}

// freezableClock is the simulated chain's clock: real time until Freeze,
// then standing still, so that after the catch-up the head stops growing
// and the database can be compared with a fixed chain.
type freezableClock struct {
	frozen atomic.Pointer[time.Time]
}

func (c *freezableClock) Now() time.Time {
	if t := c.frozen.Load(); t != nil {
		return *t
	}
	return time.Now()
}

func (c *freezableClock) Freeze() {
	t := time.Now()
	c.frozen.CompareAndSwap(nil, &t)
}

// lifetimeText is the old_parts_lifetime a run's server has.
func lifetimeText(d time.Duration) string {
	if d == 0 {
		return "(server default, 8m0s)"
	}
	return d.String()
}
