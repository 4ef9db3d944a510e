package integration

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/tideline-dev/tideline/internal/testkit"
	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/indexer/worker"
	"github.com/tideline-dev/tideline/pkg/loadgen"
	"github.com/tideline-dev/tideline/pkg/localstack"
	"github.com/tideline-dev/tideline/pkg/rpc"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// The push source and the pull source, on a real anvil mining a block a
// second, a real worker, Temporal and ClickHouse: push starts each new
// head's IndexBlockWorkflow (mode live), HeadScan on its Schedule starts
// what push left (mode direct), and Temporal runs one workflow per height.
// The wrappers around the real newHeads subscription only shape its
// timing (stop, delay).

// pushConfig: the chain's http endpoint for pull, its websocket for push,
// and /metrics on a free port (returned).
func pushConfig(t *testing.T, chainID string, node *localstack.Node, threshold uint64, tweak func(*config.Chain)) (*config.Config, string) {
	t.Helper()
	cfg := chainConfig(chainID, node.HTTPURL)
	ch := cfg.Chains[chainID]
	ch.Endpoints["ws"] = node.WSURL
	ch.Push = config.Push{Endpoint: "ws", LagThreshold: threshold}
	if tweak != nil {
		tweak(&ch)
	}
	cfg.Chains[chainID] = ch
	port, err := localstack.FreePort()
	require.NoError(t, err)
	cfg.Metrics.Listen = fmt.Sprintf("127.0.0.1:%d", port)
	return cfg, cfg.Metrics.Listen
}

// runWorkerWith runs the worker in-process, with hooks, until the test ends.
func runWorkerWith(t *testing.T, cfg *config.Config, opts worker.Options) {
	t.Helper()
	require.NoError(t, cfg.Validate())
	claimChain(t, slices.Collect(maps.Keys(cfg.Chains))...)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- worker.RunWith(ctx, cfg, zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)), opts) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
}

// pushMetrics is what /metrics says of the two sources. Live and Direct
// are heights written by runs push started and by runs HeadScan started.
type pushMetrics struct {
	DupPush, DupPull, Live, Direct, Indexed, Healthy, PushHead, FetchErrors, WriteErrors float64
}

// readPushMetrics scrapes /metrics; before the worker serves it, every
// value reads 0.
func readPushMetrics(t *testing.T, addr, chainID string) pushMetrics {
	t.Helper()
	g := testkit.Scrape(t, addr)
	read := func(name string, labels ...string) float64 {
		want := map[string]string{"chain_id": chainID}
		for i := 0; i+1 < len(labels); i += 2 {
			want[labels[i]] = labels[i+1]
		}
		return testkit.Sum(t, g, name, want)
	}
	return pushMetrics{
		DupPush:     read("duplicate_deliveries_total", "source", "push"),
		DupPull:     read("duplicate_deliveries_total", "source", "pull"),
		Live:        read("indexer_heights_indexed_total", "mode", "live"),
		Direct:      read("indexer_heights_indexed_total", "mode", "direct"),
		Indexed:     read("indexer_blocks_indexed_total"),
		Healthy:     read("push_healthy"),
		PushHead:    read("push_head_height"),
		FetchErrors: read("indexer_block_index_errors_total", "stage", "fetch"),
		WriteErrors: read("indexer_block_index_errors_total", "stage", "write"),
	}
}

// requireStoredOnce checks, beyond requireSameChain's FINAL view, that no
// height was delivered (completely written) twice, over the workers whose
// /metrics are given. A worker counts every
// complete write of either source (indexer_blocks_indexed_total, after the
// height's indexed mark is stored), so without a double delivery that count
// never exceeds the distinct indexed heights; a height written twice keeps
// it above for good. (It may stay below: a mark stored by an insert whose
// answer was lost is not counted, and its retry finds the height indexed.) This holds whatever the server does with equal keys
// (modern ClickHouse folds them within one insert, optimize_on_insert, and
// async inserts may put several writes in one): raw rows are only logged.
func requireStoredOnce(t *testing.T, chainID string, head uint64, metricsAddrs ...string) {
	t.Helper()
	conn := rawConn(t)
	writes := func() float64 {
		sum := 0.0
		for _, addr := range metricsAddrs {
			sum += testkit.Sum(t, testkit.Scrape(t, addr), "indexer_blocks_indexed_total", map[string]string{"chain_id": chainID})
		}
		return sum
	}
	var heights, below uint64
	waitFor(t, 30*time.Second, "complete writes <= indexed heights", func() (bool, string) {
		before := writes()
		require.NoError(t, conn.QueryRow(context.Background(),
			`SELECT uniqExact(number), uniqExactIf(number, number <= ?) FROM indexed_heights WHERE chain_id = ?`, head, chainID).Scan(&heights, &below))
		after := writes()
		return before == after && after > 0 && after <= float64(heights),
			fmt.Sprintf("%v complete writes (%v before the count) for %d indexed heights", after, before, heights)
	})
	require.Equal(t, head+1, below, "indexed heights 0..%d", head)
	for _, table := range []string{"blocks", "indexed_heights"} {
		var raw, logical uint64
		require.NoError(t, conn.QueryRow(context.Background(),
			`SELECT count(), uniqExact(number) FROM `+table+` WHERE chain_id = ? AND number <= ?`, chainID, head).Scan(&raw, &logical))
		if raw == logical {
			continue
		}
		// Not a double delivery by itself: an attempt that failed after its
		// first insert is retried, and ReplacingMergeTree folds the rows.
		for _, addr := range metricsAddrs {
			t.Logf("%s: %d raw rows for %d heights; metrics of %s %+v", table, raw, logical, addr, readPushMetrics(t, addr, chainID))
		}
		rows, err := conn.Query(context.Background(), `SELECT number, groupArray(version) FROM `+table+
			` WHERE chain_id = ? AND number <= ? GROUP BY number HAVING count() > 1 ORDER BY number`, chainID, head)
		require.NoError(t, err)
		for rows.Next() {
			var n uint64
			var versions []uint64
			require.NoError(t, rows.Scan(&n, &versions))
			t.Logf("%s: height %d written %d times, versions (ns) %v", table, n, len(versions), versions)
		}
		rows.Close()
	}
}

// headProbe is the test's own view of the chain: when its own newHeads
// subscription saw each height, and when the height first showed up as
// indexed (polled every 20ms).
type headProbe struct {
	mu        sync.Mutex
	seen      map[uint64]time.Time
	indexedAt map[uint64]time.Time
}

func startProbe(t *testing.T, wsURL, chainID string) *headProbe {
	t.Helper()
	p := &headProbe{seen: map[uint64]time.Time{}, indexedAt: map[uint64]time.Time{}}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })

	heads := make(chan struct {
		Number hexutil.Uint64 `json:"number"`
	}, 64)
	sub, err := nodeClient(t, wsURL).EthSubscribe(ctx, heads, "newHeads")
	require.NoError(t, err)
	wg.Go(func() {
		defer sub.Unsubscribe()
		for {
			select {
			case <-ctx.Done():
				return
			case <-sub.Err():
				return
			case h := <-heads:
				p.mu.Lock()
				if _, ok := p.seen[uint64(h.Number)]; !ok {
					p.seen[uint64(h.Number)] = time.Now()
				}
				p.mu.Unlock()
			}
		}
	})
	conn := rawConn(t)
	wg.Go(func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		from := uint64(0)
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			rows, err := conn.Query(ctx, `SELECT DISTINCT number FROM indexed_heights WHERE chain_id = ? AND number >= ?`, chainID, from)
			if err != nil {
				continue
			}
			now := time.Now()
			p.mu.Lock()
			for rows.Next() {
				var n uint64
				if rows.Scan(&n) == nil {
					if _, ok := p.indexedAt[n]; !ok {
						p.indexedAt[n] = now
					}
				}
			}
			for {
				if _, ok := p.indexedAt[from]; !ok {
					break
				}
				from++
			}
			p.mu.Unlock()
			rows.Close()
		}
	})
	return p
}

// latencies returns, ascending by height, the head latency (indexed minus
// seen) of every height seen after `after` and indexed since.
func (p *headProbe) latencies(after time.Time) map[uint64]time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[uint64]time.Duration{}
	for h, seen := range p.seen {
		if at, ok := p.indexedAt[h]; ok && seen.After(after) {
			out[h] = max(at.Sub(seen), 0)
		}
	}
	return out
}

func (p *headProbe) highestSeen() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	var top uint64
	for h := range p.seen {
		top = max(top, h)
	}
	return top
}

func quantile(ds []time.Duration, q float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1))]
}

// traffic keeps blocks non-empty (transfers and log-emitting calls, one
// every 250 ms) until the test ends.
func traffic(t *testing.T, url string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	gen, err := loadgen.New(ctx, url, zap.NewNop(), loadgen.Config{PrivateKey: localstack.AnvilDefaultKey})
	require.NoError(t, err)
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait(); gen.Close() })
	wg.Go(func() {
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				_, _ = gen.Step(ctx)
			}
		}
	})
}

// measure waits until n heights seen from now on are indexed, and returns
// their head latencies, the heights measured, and the highest height seen.
func measure(t *testing.T, probe *headProbe, n int) ([]time.Duration, []uint64, uint64) {
	t.Helper()
	from := time.Now()
	var lat map[uint64]time.Duration
	waitFor(t, 40*time.Second, fmt.Sprintf("%d heights measured", n), func() (bool, string) {
		lat = probe.latencies(from)
		return len(lat) >= n, fmt.Sprintf("%d measured", len(lat))
	})
	var ds []time.Duration
	var heights []uint64
	for h, d := range lat {
		ds = append(ds, d)
		heights = append(heights, h)
	}
	slices.Sort(heights)
	t.Logf("head latency over %d heights (seen by the test's own newHeads subscription -> indexed mark, polled every 20ms): p50 %v, p90 %v, max %v",
		len(ds), quantile(ds, 0.5).Round(time.Millisecond), quantile(ds, 0.9).Round(time.Millisecond), quantile(ds, 1).Round(time.Millisecond))
	return ds, heights, probe.highestSeen()
}

// headScanActions is how many runs the chain's HeadScan Schedule started.
func headScanActions(t *testing.T, chainID string) int {
	t.Helper()
	d, err := temporalClient(t).ScheduleClient().GetHandle(context.Background(), temporal.HeadScanScheduleID(chainID)).
		Describe(context.Background())
	require.NoError(t, err)
	return d.Info.NumActions
}

// (a) Push leading: HeadScan runs every 10 s (the production default), so
// only push can make head latency low. Push starts each new head's
// IndexBlockWorkflow: every height 0..head is indexed once, each measured
// height by one IndexBlock run started live (visible with its search
// attributes), and HeadScan ran on its Schedule only, not once per head.
// Both push sources: the websocket's newHeads, and polls of the http
// endpoint's head (push.endpoint naming it, every push.poll_interval).
func TestPushLeadingIndexesHeadsFast(t *testing.T) {
	for _, src := range []struct{ name, endpoint string }{{"ws", "ws"}, {"http poll", "local"}} {
		t.Run(src.name, func(t *testing.T) {
			pushLeading(t, "it-push-lead-"+strings.ReplaceAll(src.name, " ", "-"), src.endpoint)
		})
	}
}

func pushLeading(t *testing.T, chainID, endpoint string) {
	const samples = 12
	node, err := localstack.StartAnvil(filepath.Join(stack.dir, chainID), localstack.AnvilOptions{BlockTime: time.Second})
	require.NoError(t, err)
	t.Cleanup(node.Stop)
	traffic(t, node.HTTPURL)
	cfg, metricsAddr := pushConfig(t, chainID, node, 2, func(ch *config.Chain) {
		ch.HeadScan.Interval = 10 * time.Second
		ch.Push.Endpoint = endpoint
	})
	store := openStore(t)
	probe := startProbe(t, node.WSURL, chainID)
	runWorkerWith(t, cfg, worker.Options{})

	waitFor(t, 30*time.Second, "push healthy", func() (bool, string) {
		m := readPushMetrics(t, metricsAddr, chainID)
		return m.Healthy == 1, fmt.Sprintf("%+v", m)
	})
	before := readPushMetrics(t, metricsAddr, chainID)
	actionsBefore := headScanActions(t, chainID)
	began := time.Now()
	ds, measured, head := measure(t, probe, samples)
	elapsed := time.Since(began)
	actions := headScanActions(t, chainID) - actionsBefore
	waitIndexed(t, store, chainID, head, 30*time.Second)
	requireSameChain(t, rawConn(t), nodeClient(t, node.HTTPURL), chainID, 0, head)
	requireStoredOnce(t, chainID, head, metricsAddr)

	m := readPushMetrics(t, metricsAddr, chainID)
	t.Logf("metrics: %+v; during the measurement (%v) live runs wrote %v heights, HeadScan ran %d times (10 s period)",
		m, elapsed.Round(time.Second), m.Live-before.Live, actions)
	require.Less(t, quantile(ds, 0.5), 3*time.Second, "median head latency")
	require.Less(t, quantile(ds, 1), 8*time.Second, "every measured head well under the 10 s HeadScan period")
	require.GreaterOrEqual(t, m.Live-before.Live, float64(len(ds)-2), "runs push started, not pull's, indexed the measured heads")
	require.LessOrEqual(t, actions, int(elapsed/(10*time.Second))+2, "HeadScan runs on its Schedule only, never per head")
	// The measured heights are IndexBlock workflows push started, each
	// visible with its search attributes.
	runs := indexRuns(t, chainID, measured[0], measured[len(measured)-1])
	lives, others := 0, 0
	for _, h := range measured {
		live, n := liveRun(t, runs[h])
		others += n
		if live != nil {
			lives++
			require.Equal(t, int64(types.UltraHigh.PriorityKey()), live.Priority, "height %d", h)
		}
	}
	t.Logf("%d of %d measured heights started by push, %d other runs (pull's, ended at once)", lives, len(measured), others)
	require.GreaterOrEqual(t, lives, len(measured)-2, "push started the measured heights")
	require.LessOrEqual(t, others, actions+1, "at most one extra run per HeadScan run")
}

// stallingHeads passes the first `after` heads of the real stream (over
// all subscriptions), then nothing: the subscription stays open but silent.
type stallingHeads struct {
	src   rpc.HeadSource
	after int

	mu    sync.Mutex
	given int
}

func (s *stallingHeads) take() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.given >= s.after {
		return false
	}
	s.given++
	return true
}

func (s *stallingHeads) passed() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.given
}

func (s *stallingHeads) SubscribeHeads(ctx context.Context) (<-chan rpc.Head, <-chan error, error) {
	in, inErrs, err := s.src.SubscribeHeads(ctx)
	if err != nil {
		return nil, nil, err
	}
	out, errs := make(chan rpc.Head), make(chan error, 1)
	go func() {
		defer close(out)
		for h := range in {
			if !s.take() {
				continue // stalled: the real heads are drained and dropped
			}
			select {
			case out <- h:
			case <-ctx.Done():
			}
		}
		errs <- <-inErrs
	}()
	return out, errs, nil
}

// (b) Push stalled: push-only (a huge threshold) while healthy; after five
// heads the stream goes silent, push turns unhealthy after stall_after and
// pull takes every height; all complete once.
func TestPushStalledPullTakesOver(t *testing.T) {
	const chainID = "it-push-stall"
	node, err := localstack.StartAnvil(filepath.Join(stack.dir, chainID), localstack.AnvilOptions{BlockTime: time.Second})
	require.NoError(t, err)
	t.Cleanup(node.Stop)
	traffic(t, node.HTTPURL)
	cfg, metricsAddr := pushConfig(t, chainID, node, 1<<40, func(ch *config.Chain) { ch.Push.StallAfter = 2 * time.Second })
	store := openStore(t)
	stall := &stallingHeads{after: 5}
	runWorkerWith(t, cfg, worker.Options{WrapHeads: func(_ string, src rpc.HeadSource) rpc.HeadSource {
		stall.src = src // before the follower runs
		return stall
	}})

	waitFor(t, 30*time.Second, "five heads pushed", func() (bool, string) {
		m := readPushMetrics(t, metricsAddr, chainID)
		return stall.passed() == 5 && m.PushHead > 0, fmt.Sprintf("passed %d, %+v", stall.passed(), m)
	})
	stalledAt := nodeHead(t, node.HTTPURL)
	waitFor(t, 15*time.Second, "push unhealthy", func() (bool, string) {
		m := readPushMetrics(t, metricsAddr, chainID)
		return m.Healthy == 0, fmt.Sprintf("%+v", m)
	})
	// Pull alone carries the chain well past the stall.
	target := stalledAt + 8
	waitFor(t, 30*time.Second, fmt.Sprintf("head %d", target), func() (bool, string) {
		h := nodeHead(t, node.HTTPURL)
		return h >= target, fmt.Sprintf("head %d", h)
	})
	head := nodeHead(t, node.HTTPURL)
	waitIndexed(t, store, chainID, head, 30*time.Second)
	requireSameChain(t, rawConn(t), nodeClient(t, node.HTTPURL), chainID, 0, head)
	requireStoredOnce(t, chainID, head, metricsAddr)

	m := readPushMetrics(t, metricsAddr, chainID)
	t.Logf("stalled after 5 heads at node head %d; indexed to %d; metrics %+v", stalledAt, head, m)
	require.Equal(t, 0.0, m.Healthy)
	require.LessOrEqual(t, m.Live, 5.0, "push started nothing after its stream stalled")
	require.Positive(t, m.Direct, "pull indexed heights after the stall")
	// Which path indexed each height is read from its runs, not from the
	// counter: a height may be GapScan's (mode gap, also pull) when
	// HeadScan's start is slow under load, and a write whose answer was
	// lost is not counted at all.
	runs := indexRuns(t, chainID, stalledAt+1, head)
	for h := stalledAt + 1; h <= head; h++ {
		live, _ := liveRun(t, runs[h])
		require.Nil(t, live, "height %d, after the stall, is pull's", h)
		require.True(t, startedByPull(runs[h]), "height %d, after the stall, has a run of HeadScan or GapScan: %+v", h, runs[h])
	}
}

// startedByPull: one of the height's runs was started by HeadScan (direct)
// or GapScan (gap), the pull side's paths to a single height.
func startedByPull(runs []listed) bool {
	for _, r := range runs {
		if r.Mode == string(types.IndexModeDirect) || r.Mode == string(types.IndexModeGap) {
			return true
		}
	}
	return false
}

// delayedHeads passes every head of the real stream `delay` after it
// arrived, in order.
type delayedHeads struct {
	src   rpc.HeadSource
	delay time.Duration
}

func (d *delayedHeads) SubscribeHeads(ctx context.Context) (<-chan rpc.Head, <-chan error, error) {
	in, inErrs, err := d.src.SubscribeHeads(ctx)
	if err != nil {
		return nil, nil, err
	}
	out, errs := make(chan rpc.Head), make(chan error, 1)
	type pending struct {
		h  rpc.Head
		at time.Time
	}
	go func() {
		defer close(out)
		var queue []pending
		timer := time.NewTimer(time.Hour)
		defer timer.Stop()
		for {
			var due <-chan time.Time
			if len(queue) > 0 {
				timer.Reset(time.Until(queue[0].at))
				due = timer.C
			}
			select {
			case h, ok := <-in:
				if !ok {
					errs <- <-inErrs
					return
				}
				queue = append(queue, pending{h, time.Now().Add(d.delay)})
			case <-due:
				select {
				case out <- queue[0].h:
					queue = queue[1:]
				case <-ctx.Done():
					errs <- ctx.Err()
					return
				}
			}
		}
	}()
	return out, errs, nil
}

// (c) Push lagging: every head reaches push 5 s late, more than the
// threshold of 2 one-second blocks, so pull (HeadScan every second) starts
// the heights first; Temporal refuses push's late starts, counted as
// duplicates: nothing fetched or written for them.
func TestPushLaggingPullFetches(t *testing.T) {
	const chainID = "it-push-lag"
	node, err := localstack.StartAnvil(filepath.Join(stack.dir, chainID), localstack.AnvilOptions{BlockTime: time.Second})
	require.NoError(t, err)
	t.Cleanup(node.Stop)
	traffic(t, node.HTTPURL)
	// stall_after above the delay: a stream that late is behind, not silent.
	cfg, metricsAddr := pushConfig(t, chainID, node, 2, func(ch *config.Chain) { ch.Push.StallAfter = 8 * time.Second })
	store := openStore(t)
	runWorkerWith(t, cfg, worker.Options{WrapHeads: func(_ string, src rpc.HeadSource) rpc.HeadSource {
		return &delayedHeads{src: src, delay: 5 * time.Second}
	}})

	waitFor(t, 45*time.Second, "late push deliveries dropped as duplicates", func() (bool, string) {
		m := readPushMetrics(t, metricsAddr, chainID)
		return m.DupPush >= 8, fmt.Sprintf("%+v", m)
	})
	head := nodeHead(t, node.HTTPURL)
	waitIndexed(t, store, chainID, head, 30*time.Second)
	requireSameChain(t, rawConn(t), nodeClient(t, node.HTTPURL), chainID, 0, head)
	requireStoredOnce(t, chainID, head, metricsAddr)

	m := readPushMetrics(t, metricsAddr, chainID)
	t.Logf("indexed to %d; push %v blocks behind; metrics %+v", head, float64(head)-m.PushHead, m)
	require.Equal(t, 1.0, m.Healthy, "a late push is still healthy: delivering, just behind")
	require.Greater(t, m.Direct, m.Live, "pull indexed most heights")
	require.GreaterOrEqual(t, m.DupPush, 8.0)
}

// (c') The contrast: push 3 s late but within a threshold of 10 blocks.
// Once push is healthy, HeadScan leaves the heights above its Latest to it:
// pull starts nothing more, push starts every new height (late), and is
// never beaten to one.
func TestPushLaggingWithinThresholdLeftToPush(t *testing.T) {
	const chainID = "it-push-lag-ok"
	node, err := localstack.StartAnvil(filepath.Join(stack.dir, chainID), localstack.AnvilOptions{BlockTime: time.Second})
	require.NoError(t, err)
	t.Cleanup(node.Stop)
	traffic(t, node.HTTPURL)
	cfg, metricsAddr := pushConfig(t, chainID, node, 10, func(ch *config.Chain) { ch.Push.StallAfter = 8 * time.Second })
	store := openStore(t)
	runWorkerWith(t, cfg, worker.Options{WrapHeads: func(_ string, src rpc.HeadSource) rpc.HeadSource {
		return &delayedHeads{src: src, delay: 3 * time.Second}
	}})

	waitFor(t, 30*time.Second, "push healthy", func() (bool, string) {
		m := readPushMetrics(t, metricsAddr, chainID)
		return m.Healthy == 1, fmt.Sprintf("%+v", m)
	})
	// Until push was healthy pull took every height; let what it started
	// by then (up to the head of that moment, and one more for a scan
	// running across the change) be indexed before counting.
	settled := nodeHead(t, node.HTTPURL) + 1
	waitIndexed(t, store, chainID, settled, 30*time.Second)
	before := readPushMetrics(t, metricsAddr, chainID)
	waitFor(t, 40*time.Second, "eight more heights pushed", func() (bool, string) {
		m := readPushMetrics(t, metricsAddr, chainID)
		return m.Live >= before.Live+8, fmt.Sprintf("%+v", m)
	})
	m := readPushMetrics(t, metricsAddr, chainID)
	head := uint64(m.PushHead)
	waitIndexed(t, store, chainID, head, 30*time.Second)
	requireSameChain(t, rawConn(t), nodeClient(t, node.HTTPURL), chainID, 0, head)
	requireStoredOnce(t, chainID, head, metricsAddr)
	t.Logf("indexed to %d; node head %d; before %+v; after %+v", head, nodeHead(t, node.HTTPURL), before, m)
	require.Equal(t, before.Direct, m.Direct, "pull indexed nothing while push, within the threshold, was healthy")
	require.Equal(t, before.DupPush, m.DupPush, "push was not beaten to a height once healthy (earlier ones: pull's start)")
}
