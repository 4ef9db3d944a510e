// Command benchcatchup measures a catch-up end to end on the real local
// stack (`make bench-catchup`, issue 8): the Temporal dev server and
// ClickHouse started as the integration tests start them, a simulated chain
// (pkg/simchain, in this process) N heights ahead of an empty database and
// growing at its block time, and the indexer worker as a subprocess built
// from ./app/indexer with a generated config. It runs until the watermark
// reaches the chain's live edge (the head, less the blocks of one head-scan
// interval that the live path may still be indexing: with 2 s blocks, the
// newest one), printing a line per phase and a status line
// every 10 s, then checks the database against the chain and ends with one
// machine-readable line:
//
//	catchup: n=… heights_per_s=… txs_per_s=… rows_per_s=… lag_p95_blocks=… lag_max_blocks=… missing=… duplicates=… workflows=… peak_rss_mb=…
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
//   - duplicates: extra writes of heights, see duplicates in verify.go;
//   - workflows: workflow executions on the (fresh) dev server, counted
//     through the visibility API, -1 if it did not answer;
//   - peak_rss_mb: the worker process's VmHWM, MiB.
//
// The exit code is 0 for an exact catch-up (missing=0, duplicates=0), 1
// otherwise, 2 on the timeout, 130 when interrupted; everything started is
// stopped in every case.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/chain"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/localstack"
	"github.com/tideline-dev/tideline/pkg/simchain"
	"github.com/tideline-dev/tideline/pkg/storage"
	"github.com/tideline-dev/tideline/pkg/temporal"
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

type options struct {
	n          uint64
	txs        int
	logs       float64
	blockTime  time.Duration
	rangeSize  int // -1: leave scheduler.range_size out
	push       bool
	sets       overrideList
	timeout    time.Duration
	seed       uint64
	logLevel   string
	keep       bool
	cpuProfile string
	cpuSeconds int
}

func main() { os.Exit(run()) }

func run() int {
	var o options
	flag.Uint64Var(&o.n, "n", 50000, "backlog: the chain starts this many heights above genesis (heights 0..n exist)")
	flag.IntVar(&o.txs, "txs", 20, "transactions per block")
	flag.Float64Var(&o.logs, "logs", 2, "logs per transaction, on average")
	flag.DurationVar(&o.blockTime, "block-time", 2*time.Second, "block time of the simulated chain (and the chain's block_time)")
	flag.IntVar(&o.rangeSize, "range", -1, "scheduler.range_size (heights per IndexRange; 0 = one workflow per height); unset: the key is left out")
	flag.BoolVar(&o.push, "push", false, "turn the push source (websocket newHeads) on")
	flag.Var(&o.sets, "set", "extra config `key=value`, relative to the chain unless it starts with log., metrics., temporal., clickhouse. or chains. (repeatable)")
	flag.DurationVar(&o.timeout, "timeout", 60*time.Minute, "give up when the watermark has not reached the head after this long")
	flag.Uint64Var(&o.seed, "seed", 1, "seed of the simulated chain")
	flag.StringVar(&o.logLevel, "log-level", "info", "the worker's log.level (its log goes to worker.log in the run's folder)")
	flag.BoolVar(&o.keep, "keep", false, "keep the run's folder (logs, data) even when the run passes")
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the worker (from its /debug/pprof/profile, if served) to this file")
	flag.IntVar(&o.cpuSeconds, "cpuprofile-seconds", 30, "length of the CPU profile, taken from the first indexed height on")
	flag.Parse()
	if o.n == 0 || o.txs < 0 || o.logs < 0 || o.blockTime <= 0 || o.timeout <= 0 || o.cpuSeconds <= 0 {
		fmt.Fprintln(os.Stderr, "bench-catchup: -n, -block-time, -timeout and -cpuprofile-seconds must be positive; -txs and -logs not negative")
		return 64
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	b := &bench{opts: o, start: time.Now()}
	res, err := b.run(ctx)
	b.cleanup()
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
	keep := b.dir != "" && (o.keep || res.exitCode() != 0)
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
	opts    options
	start   time.Time
	dir     string
	closers []func()

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
}

func (b *bench) say(format string, args ...any) {
	now := time.Now()
	since := "setup"
	if !b.workerStart.IsZero() {
		since = fmt.Sprintf("%7.1fs", now.Sub(b.workerStart).Seconds())
	}
	fmt.Printf("%s %s  %s\n", now.UTC().Format("15:04:05"), since, fmt.Sprintf(format, args...))
}

func (b *bench) onStop(f func()) { b.closers = append(b.closers, f) }

// cleanup stops everything started, newest first.
func (b *bench) cleanup() {
	for i := len(b.closers) - 1; i >= 0; i-- {
		b.closers[i]()
	}
	b.closers = nil
}

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
	b.say("bench-catchup: n=%d txs=%d logs=%g block_time=%s range=%s push=%v set=%q (folder %s)",
		o.n, o.txs, o.logs, o.blockTime, rangeText(o.rangeSize), o.push, []string(o.sets), b.dir)

	t := time.Now()
	bin, err := buildIndexer(ctx, root, b.dir)
	if err != nil {
		return result{}, err
	}
	b.say("built ./app/indexer in %.1fs", time.Since(t).Seconds())

	t = time.Now()
	tmp, err := localstack.StartTemporal(filepath.Join(b.dir, "temporal"), localstack.TemporalOptions{NoUI: true, SearchAttributes: temporal.SearchAttributeSpecs()})
	if err != nil {
		return result{}, fmt.Errorf("start temporal: %w", err)
	}
	b.onStop(tmp.Stop)
	ch, err := localstack.StartClickHouse(filepath.Join(b.dir, "clickhouse"))
	if err != nil {
		return result{}, fmt.Errorf("start clickhouse: %w", err)
	}
	b.onStop(ch.Stop)
	b.servers = map[string]*localstack.Process{"clickhouse": ch.Process, "temporal": tmp.Process}
	b.say("Temporal dev server on %s, ClickHouse on %s (%.1fs)", tmp.HostPort, ch.Addr, time.Since(t).Seconds())

	b.clock = &freezableClock{}
	sc := simchain.DefaultConfig()
	sc.Seed = o.seed
	sc.Length = o.n
	sc.BlockTime = o.blockTime
	sc.TxsPerBlock = o.txs
	sc.LogsPerTx = o.logs
	sc.Now = b.clock.Now
	// Not ctx: an interrupt stops the chain in cleanup, after the worker.
	if b.sim, err = simchain.Start(context.Background(), sc); err != nil {
		return result{}, err
	}
	b.onStop(func() { b.sim.Close() })
	b.say("simulated chain on %s: head %d, %d txs/block, %g logs/tx, a block every %s", b.sim.HTTPURL(), b.sim.Head(), o.txs, o.logs, o.blockTime)

	port, err := localstack.FreePort()
	if err != nil {
		return result{}, err
	}
	b.metrics = fmt.Sprintf("127.0.0.1:%d", port)
	wc := workerConfig{
		ChainID: chainID, EVMChainID: sc.ChainID, BlockTime: o.blockTime, HTTPURL: b.sim.HTTPURL(), WSURL: b.sim.WSURL(), Push: o.push,
		TemporalHostPort: tmp.HostPort, ClickHouseAddr: ch.Addr, Database: database,
		MetricsListen: b.metrics, LogLevel: o.logLevel, Overrides: o.sets,
	}
	if o.rangeSize >= 0 {
		wc.RangeSize = &o.rangeSize
	}
	yml, err := yamlOf(wc)
	if err != nil {
		return result{}, err
	}
	cfgPath := filepath.Join(b.dir, "worker.yaml")
	if err := os.WriteFile(cfgPath, yml, 0o644); err != nil {
		return result{}, err
	}

	if b.tc, err = client.DialContext(ctx, client.Options{HostPort: tmp.HostPort, Namespace: "default", Logger: temporal.NewLogger(zap.NewNop())}); err != nil {
		return result{}, fmt.Errorf("temporal client: %w", err)
	}
	b.onStop(b.tc.Close)

	// The clock starts with the worker process: its start-up (connecting,
	// migrating the empty database) is part of a catch-up.
	if b.worker, err = startWorker(bin, cfgPath, b.dir); err != nil {
		return result{}, err
	}
	b.workerStart = time.Now()
	b.onStop(b.worker.Stop)
	b.say("worker started (pid %d, config %s, log %s)", b.worker.Pid(), cfgPath, b.worker.LogPath)
	if err := b.waitWorkerReady(ctx); err != nil {
		return result{}, err
	}
	if err := b.openDatabase(ctx, ch.Addr); err != nil {
		return result{}, err
	}
	return b.measure(ctx)
}

func rangeText(n int) string {
	if n < 0 {
		return "(indexer default)"
	}
	return fmt.Sprint(n)
}

// waitWorkerReady waits for /metrics, which the worker serves once it has
// migrated the database, registered its workers and set up its schedules.
func (b *bench) waitWorkerReady(ctx context.Context) error {
	deadline := time.Now().Add(time.Minute)
	for {
		if b.worker.Exited() {
			return fmt.Errorf("worker exited during start-up:\n%s", b.worker.Tail(4000))
		}
		if _, err := scrape(ctx, b.metrics); err == nil {
			b.say("worker ready: serving /metrics on %s", b.metrics)
			return nil
		} else if time.Now().After(deadline) {
			return fmt.Errorf("worker not serving /metrics after a minute (%v):\n%s", err, b.worker.Tail(4000))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (b *bench) openDatabase(ctx context.Context, addr string) error {
	var err error
	b.store, err = storage.Open(ctx, storage.Config{
		Addr: addr, Database: database, Username: "default",
		DialTimeout: 5 * time.Second, QueryTimeout: 5 * time.Minute,
	}, zap.NewNop())
	if err != nil {
		return fmt.Errorf("open the database: %w", err)
	}
	b.onStop(func() { b.store.Close() })
	b.conn, err = clickhouse.Open(&clickhouse.Options{
		Addr: []string{addr}, Auth: clickhouse.Auth{Database: database, Username: "default"},
		DialTimeout: 5 * time.Second, ReadTimeout: 10 * time.Minute,
	})
	if err != nil {
		return fmt.Errorf("open the database: %w", err)
	}
	b.onStop(func() { b.conn.Close() })
	return nil
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

// sampleRSS records the worker's peak RSS; VmHWM is already a peak, so the
// last successful read is the answer, sampled so a worker that dies still
// leaves one.
func (b *bench) sampleRSS() float64 {
	if mib, err := vmHWM(b.worker.Pid()); err == nil {
		kib := uint64(mib * 1024)
		for {
			old := b.peakRSS.Load()
			if kib <= old || b.peakRSS.CompareAndSwap(old, kib) {
				break
			}
		}
	}
	return float64(b.peakRSS.Load()) / 1024
}

// schedulerView follows the catch-up scheduler through its `progress`
// query and the database: a line when it starts, when each bucket's heights
// are all started and when they are all indexed, and when it ends.
type schedulerView struct {
	mu             sync.Mutex // the status line reads progress
	seen, finished bool
	began          time.Time
	lastBucket     time.Time
	progress       types.SchedulerProgress
	spans          []types.LevelSpan
	started        map[types.PriorityLevel]bool
	indexed        map[types.PriorityLevel]bool
}

// watchScheduler follows the scheduler every 2 s until ctx ends, apart
// from the per-second sampling: a query waits for a workflow task, which a
// busy worker may take seconds to pick up.
func (b *bench) watchScheduler(ctx context.Context, v *schedulerView) {
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			b.followScheduler(ctx, v)
		}
	}
}

// status is a short summary for the status line.
func (v *schedulerView) status() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.seen || v.finished {
		return ""
	}
	return fmt.Sprintf("; scheduler: %d left to start, %d in flight", v.progress.Remaining, v.progress.InFlight)
}

func (b *bench) followScheduler(ctx context.Context, v *schedulerView) {
	v.mu.Lock()
	defer v.mu.Unlock()
	qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	desc, err := b.tc.DescribeWorkflowExecution(qctx, temporal.SchedulerID(chainID), "")
	if err != nil {
		return // not started yet (or the frontend is busy: next tick)
	}
	info := desc.GetWorkflowExecutionInfo()
	if v.began.IsZero() {
		// The first run's start (later runs continue as new under the
		// same ID); the query may answer only later on a busy worker.
		v.began = info.GetStartTime().AsTime()
		b.say("scheduler started %.1fs after the worker", v.began.Sub(b.workerStart).Seconds())
	}
	running := info.GetStatus() == enums.WORKFLOW_EXECUTION_STATUS_RUNNING
	if running {
		if q, err := b.tc.QueryWorkflow(qctx, temporal.SchedulerID(chainID), "", temporal.SchedulerProgressQuery); err == nil {
			var p types.SchedulerProgress
			if q.Get(&p) == nil {
				if !v.seen {
					v.seen = true
					v.started, v.indexed = map[types.PriorityLevel]bool{}, map[types.PriorityLevel]bool{}
					for _, sp := range types.LevelSpans(p.Head, p.Owned.From, b.opts.blockTime) {
						if r, ok := intersect(sp.Range, p.Owned); ok {
							v.spans = append(v.spans, types.LevelSpan{Level: sp.Level, Range: r})
						}
					}
					var parts []string
					for _, bk := range p.Buckets {
						parts = append(parts, fmt.Sprintf("%s=%d", bk.Name, bk.Total))
					}
					b.say("scheduler progress: owns [%d, %d], head %d when it began; buckets %s", p.Owned.From, p.Owned.To, p.Head, strings.Join(parts, " "))
				}
				v.progress = p
				for _, bk := range p.Buckets {
					if bk.Total > 0 && bk.Done >= bk.Total && !v.started[bk.Level] {
						v.started[bk.Level] = true
						b.say("bucket %s: all %d heights started (scheduler run %d)", bk.Name, bk.Total, p.Runs)
					}
				}
			}
		}
	} else if !v.finished {
		v.finished = true
		b.say("scheduler finished (%s), %.1fs after it started", strings.ToLower(info.GetStatus().String()),
			info.GetCloseTime().AsTime().Sub(v.began).Seconds())
	}
	if !v.seen {
		return
	}
	// A bucket is done when its heights are indexed, which the database
	// says (the scheduler's counts are of heights started).
	for _, sp := range v.spans {
		if v.indexed[sp.Level] {
			continue
		}
		n, err := b.store.CountIndexed(qctx, chainID, []chain.HeightRange{sp.Range})
		if err != nil || n[0] < sp.Range.Len() {
			continue
		}
		v.indexed[sp.Level] = true
		// Buckets go newest first: this one's time runs from the previous
		// one's end (or the scheduler's start).
		from := v.began
		if !v.lastBucket.IsZero() {
			from = v.lastBucket
		}
		v.lastBucket = time.Now()
		secs := v.lastBucket.Sub(from).Seconds()
		b.say("bucket %s: all %d heights [%d, %d] indexed, %.1fs after the scheduler started (%.1f heights/s over %.1fs)",
			sp.Level, sp.Range.Len(), sp.Range.From, sp.Range.To, v.lastBucket.Sub(v.began).Seconds(), float64(sp.Range.Len())/secs, secs)
	}
}

func intersect(a, b chain.HeightRange) (chain.HeightRange, bool) {
	r := chain.HeightRange{From: max(a.From, b.From), To: min(a.To, b.To)}
	return r, r.From <= r.To
}

// measure follows the catch-up until the watermark reaches the head (or
// the timeout), then settles and checks the database.
func (b *bench) measure(ctx context.Context) (result, error) {
	o := b.opts
	var (
		lags        lagSampler
		firstIdx    bool
		sched       schedulerView
		lastStatus  = time.Now()
		lastCount   uint64
		profileDone = make(chan struct{})
		profiling   bool
		res         result
	)
	watchCtx, stopWatch := context.WithCancel(ctx)
	watching := make(chan struct{})
	go func() {
		defer close(watching)
		b.watchScheduler(watchCtx, &sched)
	}()
	defer func() {
		stopWatch()
		<-watching
	}()
	samplerCtx, stopSampler := context.WithCancel(ctx)
	sampling := make(chan struct{})
	go func() {
		defer close(sampling)
		lags.run(samplerCtx, b)
	}()
	defer func() {
		stopSampler()
		<-sampling
	}()
	deadline := b.workerStart.Add(o.timeout)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var headEnd uint64
	for {
		select {
		case <-ctx.Done():
			return result{}, ctx.Err()
		case <-tick.C:
		}
		if b.worker.Exited() {
			return result{}, fmt.Errorf("worker exited during the catch-up:\n%s", b.worker.Tail(4000))
		}
		head := b.sim.Head()
		top, found, err := b.store.LastIndexed(ctx, chainID)
		if err != nil {
			b.say("reading the newest indexed height: %v", err)
			continue
		}
		if found {
			if !firstIdx {
				firstIdx = true
				b.say("first height indexed: %d (head %d)", top, head)
				if o.cpuProfile != "" {
					profiling = true
					go func() {
						defer close(profileDone)
						// errNoPprof included: the run goes on without.
						if err := cpuProfile(ctx, b.metrics, o.cpuSeconds, o.cpuProfile); err != nil {
							b.say("no CPU profile: %v", err)
						} else {
							b.say("CPU profile of %ds written to %s", o.cpuSeconds, o.cpuProfile)
						}
					}()
				}
			}
		}
		// Caught up when the watermark, as the indexer computes it, has
		// reached the live edge: at most the blocks of one head-scan
		// interval above it, which the live path is indexing (with 2 s
		// blocks, every height but the newest). Waiting for watermark =
		// head exactly would wait for a moment that a steady live lag of
		// one block makes rare. The one-query count keeps the per-second
		// check cheap until it can hold.
		caughtUp := false
		edge := head - min(head, liveEdge(o.blockTime))
		if found && top >= edge {
			n, err := b.store.CountIndexed(ctx, chainID, []chain.HeightRange{{From: 0, To: edge}})
			if err == nil && n[0] == edge+1 {
				wm, ok, err := b.store.Watermark(ctx, chainID, 0)
				if caughtUp = err == nil && ok && wm >= edge; caughtUp {
					headEnd = wm
				}
			}
		}
		if caughtUp {
			res.Seconds = time.Since(b.workerStart).Seconds()
			b.say("caught up: watermark %d, head %d after %.1fs (%.1f heights/s)", headEnd, head, res.Seconds, float64(headEnd+1)/res.Seconds)
			break
		}
		if time.Now().After(deadline) {
			res.TimedOut = true
			res.Seconds = time.Since(b.workerStart).Seconds()
			headEnd = head
			b.say("TIMEOUT after %s: the watermark has not reached head %d", o.timeout, head)
			break
		}
		if time.Since(lastStatus) >= statusEvery {
			n, err := b.store.CountIndexed(ctx, chainID, []chain.HeightRange{{From: 0, To: head}})
			if err == nil {
				secs := time.Since(lastStatus).Seconds()
				elapsed := time.Since(b.workerStart).Seconds()
				wm, _, _ := b.store.Watermark(ctx, chainID, 0)
				line := fmt.Sprintf("status: %d/%d heights indexed, %.1f/s now, %.1f/s overall; watermark %d, newest %d, head %d, lag %d (p95 so far %d); worker rss peak %.0f MiB",
					n[0], head+1, float64(n[0]-min(n[0], lastCount))/secs, float64(n[0])/elapsed, wm, top, head, head-min(head, top), lags.p95(), b.sampleRSS())
				b.say("%s%s", line, sched.status())
				lastCount = n[0]
			}
			lastStatus = time.Now()
		}
	}
	stopSampler()
	<-sampling
	res.LagP95, res.LagMax = lags.result()
	b.say("lag: %d samples from the first indexed height on, p95 %d, max %d blocks", lags.count(), res.LagP95, res.LagMax)
	stopWatch()
	<-watching

	// The measurement is over: stop the head and let the last heights and
	// the scheduler finish, so that the check sees a fixed chain and no
	// write still in flight.
	b.clock.Freeze()
	final := b.sim.Head()
	if !res.TimedOut {
		b.say("chain frozen at head %d; waiting for the last heights and the scheduler", final)
		if err := b.settle(ctx, final); err != nil {
			return result{}, err
		}
	}
	b.followScheduler(ctx, &sched) // the last bucket and the scheduler's end
	if profiling {
		select {
		case <-profileDone:
		case <-ctx.Done():
			return result{}, ctx.Err()
		}
	}
	written := int64(-1)
	if m, err := scrape(ctx, b.metrics); err == nil {
		if v, ok := m["indexer_blocks_indexed_total"]; ok {
			written = int64(v)
		}
	} else {
		b.say("reading the worker's counters: %v", err)
	}
	// The check reads a database nobody writes to any more, and has the
	// CPU to itself.
	res.PeakRSSMiB = b.sampleRSS()
	cpu := b.cpuUse()
	b.worker.Stop()
	b.say("worker stopped")

	t := time.Now()
	v, err := verify(ctx, b.conn, b.sim, chainID, final, func(s string) { b.say("%s", s) })
	if err != nil {
		return result{}, err
	}
	res.Missing = v.Missing
	res.Duplicates = duplicates(written, v)
	b.say("checked [0, %d] against the chain in %.1fs: %d missing; %d blocks written (worker counter), %d heights with a block row; without FINAL %d block rows, %d indexed marks of %d heights",
		final, time.Since(t).Seconds(), v.Missing, written, v.DistinctBlocks, v.BlockRows, v.MarkRows, v.DistinctMarks)
	for _, s := range v.Bad {
		b.say("  %s", s)
	}
	if written >= 0 && uint64(written) < v.DistinctBlocks {
		b.say("note: the worker counted fewer blocks written (%d) than heights stored (%d): some write path does not count; duplicates rest on the row counts", written, v.DistinctBlocks)
	}

	if res.TimedOut {
		// The rate is of what got indexed.
		res.Heights = v.DistinctMarks
	} else {
		res.Heights = headEnd + 1
	}
	for h := uint64(0); h < res.Heights && h <= headEnd; h++ {
		e := b.sim.Expected(h)
		res.Txs += uint64(e.TxCount)
		res.Rows += 1 + uint64(e.TxCount) + uint64(e.LogCount)
	}
	res.Workflows = b.countWorkflows(ctx)
	if len(cpu) > 0 && res.Heights > 0 {
		var parts []string
		for _, name := range []string{"clickhouse", "worker", "temporal"} {
			if s, ok := cpu[name]; ok {
				parts = append(parts, fmt.Sprintf("%s %.1f s (%.2f ms/height)", name, s, s*1000/float64(res.Heights)))
			}
		}
		b.say("cpu from the start to the worker's stop: %s", strings.Join(parts, ", "))
	}
	return res, nil
}

// cpuUse is the CPU time (user and system, seconds) each process of the
// run has used so far: ClickHouse, the worker and the Temporal dev server.
// Per height, it is what bounds the rate on a machine whose cores are all
// busy, and it changes far less than the rate when other work shares the
// machine.
func (b *bench) cpuUse() map[string]float64 {
	out := map[string]float64{}
	procs := map[string]*localstack.Process{"worker": b.worker}
	for name, p := range b.servers {
		procs[name] = p
	}
	for name, p := range procs {
		s, err := cpuSeconds(p.Pid())
		if err != nil {
			b.say("cpu of %s: %v", name, err)
			continue
		}
		out[name] = s
	}
	return out
}

// settle waits (bounded) until the watermark reaches the frozen head, the
// scheduler has ended and the worker's write counter stands still.
func (b *bench) settle(ctx context.Context, head uint64) error {
	wait := func(what string, cond func() bool) error {
		deadline := time.Now().Add(settleTimeout)
		for !cond() {
			if time.Now().After(deadline) {
				b.say("still waiting for %s after %s; checking as is", what, settleTimeout)
				return nil
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(500 * time.Millisecond):
			}
		}
		return nil
	}
	err := wait(fmt.Sprintf("the watermark at %d", head), func() bool {
		wm, ok, err := b.store.Watermark(ctx, chainID, 0)
		return err == nil && ok && wm >= head
	})
	if err != nil {
		return err
	}
	err = wait("the scheduler to end", func() bool {
		desc, err := b.tc.DescribeWorkflowExecution(ctx, temporal.SchedulerID(chainID), "")
		if err != nil {
			return true // never started (a backlog below the catch-up threshold)
		}
		return desc.GetWorkflowExecutionInfo().GetStatus() != enums.WORKFLOW_EXECUTION_STATUS_RUNNING
	})
	if err != nil {
		return err
	}
	// Writes still in flight (a duplicate racing the check) show in the
	// counter: wait until it has not moved for three seconds.
	var last float64 = -1
	var since time.Time
	return wait("the worker's writes to stop", func() bool {
		m, err := scrape(ctx, b.metrics)
		if err != nil {
			return false
		}
		v := m["indexer_blocks_indexed_total"]
		if v != last {
			last, since = v, time.Now()
			return false
		}
		return time.Since(since) >= 3*time.Second
	})
}

// countWorkflows counts every workflow execution of the dev server, which
// this run started fresh: the IndexBlock (and IndexRange) workflows, the
// scheduler's runs, HeadScan and GapScan runs, open or closed.
func (b *bench) countWorkflows(ctx context.Context) int64 {
	qctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	total, err := b.tc.CountWorkflow(qctx, &workflowservice.CountWorkflowExecutionsRequest{Namespace: "default"})
	if err != nil {
		b.say("counting workflows: %v", err)
		return -1
	}
	var parts []string
	for _, wt := range []string{temporal.IndexBlockWorkflow, "IndexRange", temporal.SchedulerWorkflow, temporal.HeadScanWorkflow, temporal.GapScanWorkflow} {
		r, err := b.tc.CountWorkflow(qctx, &workflowservice.CountWorkflowExecutionsRequest{
			Namespace: "default", Query: fmt.Sprintf("WorkflowType = '%s'", wt)})
		if err == nil && r.GetCount() > 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", wt, r.GetCount()))
		}
	}
	b.say("workflow executions: %d (%s)", total.GetCount(), strings.Join(parts, " "))
	return total.GetCount()
}

// lagSampler samples the live lag every second, apart from the main loop
// whose status and watermark queries can take longer than a second on a
// busy machine: head of the chain minus the newest indexed height, from the
// first indexed height on. It also samples the worker's peak RSS.
type lagSampler struct {
	mu   sync.Mutex
	lags []uint64
}

func (s *lagSampler) run(ctx context.Context, b *bench) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		b.sampleRSS()
		head := b.sim.Head()
		top, found, err := b.store.LastIndexed(ctx, chainID)
		if err != nil || !found {
			continue
		}
		s.mu.Lock()
		s.lags = append(s.lags, head-min(head, top))
		s.mu.Unlock()
	}
}

func (s *lagSampler) p95() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return percentile(s.lags, 95)
}

func (s *lagSampler) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.lags)
}

func (s *lagSampler) result() (p95, maxLag uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return percentile(s.lags, 95), maxOf(s.lags)
}

// liveEdge is how many of the newest heights may still be in flight on the
// live path when the catch-up counts as done: the blocks of one head-scan
// interval (one block time, at least 1 s; see yamlOf), at least one.
func liveEdge(blockTime time.Duration) uint64 {
	scan := max(blockTime, time.Second)
	return uint64((scan + blockTime - 1) / blockTime)
}
