package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/internal/testkit"
	"github.com/tideline-dev/tideline/pkg/loadgen"
	"github.com/tideline-dev/tideline/pkg/localstack"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// catchupBacklog makes an anvil chain with some traffic and a backlog of
// empty blocks, large enough for the SchedulerWorkflow to take it.
func catchupBacklog(t *testing.T, chainID string, empty uint64) (*localstack.Node, uint64) {
	t.Helper()
	node, err := localstack.StartAnvil(filepath.Join(stack.dir, chainID), localstack.AnvilOptions{})
	require.NoError(t, err)
	t.Cleanup(node.Stop)
	makeTraffic(t, node.HTTPURL, localstack.AnvilDefaultKey, 20)
	gen, err := loadgen.New(context.Background(), node.HTTPURL, zap.NewNop(), loadgen.Config{PrivateKey: localstack.AnvilDefaultKey})
	require.NoError(t, err)
	require.NoError(t, gen.MineEmpty(context.Background(), empty))
	gen.Close()
	return node, nodeHead(t, node.HTTPURL)
}

// catchupSettings make the scheduler take a backlog of a few hundred
// heights in several runs, fast enough for a test.
var catchupSettings = map[string]any{
	"headscan":  map[string]any{"interval": "1s", "catchup_threshold": 200},
	"scheduler": map[string]any{"rate_limit": 300, "batch_size": 50, "max_in_flight": 400, "continue_as_new_after": 150, "range_size": 0},
}

// SIGKILL the worker at random points of a catch-up, restart it each time:
// nothing is missing, nothing is stored twice, the watermark is the head.
func TestSIGKILLDuringCatchupLosesNothing(t *testing.T) {
	const chainID = "it-chaos-kill"
	node, head := catchupBacklog(t, chainID, 400)
	bin := buildIndexer(t)
	cfgPath := writeConfig(t, chainID, node.HTTPURL, "", catchupSettings)
	store := openStore(t)
	logDir := t.TempDir()

	rng := rand.New(rand.NewPCG(42, 7))
	kills := 0
	for i := 0; i < 3; i++ {
		// Kill once a further random share of the backlog is indexed.
		target := head * uint64(i+1) / 5
		target += uint64(rng.IntN(int(head / 10)))
		w, err := localstack.Start(fmt.Sprintf("worker-%d", i), filepath.Join(logDir, fmt.Sprintf("worker-%d.log", i)),
			bin, "worker", "--config", cfgPath)
		require.NoError(t, err)
		waitFor(t, 2*time.Minute, fmt.Sprintf("%d blocks stored", target), func() (bool, string) {
			n, _, _ := testkit.CountRows(t, stack.ch.Addr, database, chainID)
			return n >= target, fmt.Sprintf("%d blocks", n)
		})
		w.Kill()
		kills++
		n, _, _ := testkit.CountRows(t, stack.ch.Addr, database, chainID)
		t.Logf("SIGKILL %d with %d of %d blocks stored", kills, n, head+1)
	}
	last, err := localstack.Start("worker-final", filepath.Join(logDir, "worker-final.log"), bin, "worker", "--config", cfgPath)
	require.NoError(t, err)
	t.Cleanup(last.Stop)
	waitIndexed(t, store, chainID, head, 4*time.Minute)
	requireSameChain(t, rawConn(t), nodeClient(t, node.HTTPURL), chainID, 0, head)
	require.Equal(t, 3, kills)
}

// Restarting ClickHouse and then the Temporal dev server mid-run: the run
// converges with nothing lost.
func TestServerRestartsMidRunConverge(t *testing.T) {
	const chainID = "it-chaos-restart"
	node, head := catchupBacklog(t, chainID, 400)
	store := openStore(t)
	cfg := chainConfig(chainID, node.HTTPURL)
	ch := cfg.Chains[chainID]
	ch.HeadScan.CatchupThreshold = 200
	ch.Scheduler.RateLimit = 300
	ch.Scheduler.BatchSize = 50
	ch.Scheduler.MaxInFlight = 400
	ch.Scheduler.ContinueAsNewAfter = 150
	cfg.Chains[chainID] = ch
	runWorker(t, cfg)
	// What the servers said, when the run does not converge: the only
	// account of a restart that went wrong.
	t.Cleanup(func() {
		if t.Failed() {
			explainStall(t, chainID)
		}
	})

	storedAtLeast := func(n uint64) {
		waitFor(t, 5*time.Minute, fmt.Sprintf("%d blocks stored", n), func() (bool, string) {
			got, _, _ := testkit.CountRows(t, stack.ch.Addr, database, chainID)
			return got >= n, fmt.Sprintf("%d blocks", got)
		})
	}
	storedAtLeast(head / 4)
	require.NoError(t, restartClickHouse(), "restart ClickHouse")
	t.Log("ClickHouse restarted")
	storedAtLeast(head / 2)
	require.NoError(t, stack.temporal.Restart(), "restart Temporal")
	t.Log("Temporal restarted")
	waitIndexed(t, store, chainID, head, 4*time.Minute)
	requireSameChain(t, rawConn(t), nodeClient(t, node.HTTPURL), chainID, 0, head)
}

// explainStall logs what Temporal says of the height above the watermark
// and of the chain's scheduler: the account of a run that did not
// converge.
func explainStall(t *testing.T, chainID string) {
	t.Helper()
	wm, _, err := openStore(t).Watermark(context.Background(), chainID, 0)
	if err != nil {
		t.Logf("explaining the stall: %v", err)
		return
	}
	tc := temporalClient(t)
	for _, id := range []string{temporal.IndexBlockID(chainID, wm+1), temporal.SchedulerID(chainID)} {
		d, err := tc.DescribeWorkflowExecution(context.Background(), id, "")
		if err != nil {
			t.Logf("%s: %v", id, err)
			continue
		}
		info := d.GetWorkflowExecutionInfo()
		t.Logf("%s: %s, started %s, %d history events; pending workflow task: %v", id, info.GetStatus(),
			info.GetStartTime().AsTime().Format(time.RFC3339), info.GetHistoryLength(), d.GetPendingWorkflowTask())
		for _, a := range d.GetPendingActivities() {
			t.Logf("%s: pending %s: %s, attempt %d, last failure %v", id, a.GetActivityType().GetName(), a.GetState(),
				a.GetAttempt(), a.GetLastFailure().GetMessage())
		}
		if id != temporal.SchedulerID(chainID) {
			logHistory(t, id, time.Now())
		}
	}
}

// faultyProxy sits between the indexer and the node: it fails a share of
// requests with 503, delays others up to a bound, and corrupts a share of
// block answers. The random source is seeded, so a run is reproducible.
type faultyProxy struct {
	target     string
	errorRate  float64
	maxLatency time.Duration
	badRate    float64

	mu                        sync.Mutex
	rng                       *rand.Rand
	served, failed, bad, slow int
}

func (p *faultyProxy) roll() (fail, corrupt bool, delay time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.served++
	if p.rng.Float64() < p.errorRate {
		p.failed++
		return true, false, 0
	}
	if p.rng.Float64() < p.badRate {
		corrupt = true
	}
	if p.rng.Float64() < 0.2 {
		p.slow++
		delay = time.Duration(p.rng.Int64N(int64(p.maxLatency)))
	}
	return false, corrupt, delay
}

func (p *faultyProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	fail, corrupt, delay := p.roll()
	if fail {
		http.Error(w, "injected fault", http.StatusServiceUnavailable)
		return
	}
	select {
	case <-time.After(delay):
	case <-r.Context().Done():
		return
	}
	resp, err := http.Post(p.target, "application/json", bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	if corrupt && bytes.Contains(body, []byte("eth_getBlockByNumber")) && !bytes.HasPrefix(bytes.TrimSpace(body), []byte("[")) {
		var msg map[string]json.RawMessage
		if json.Unmarshal(out, &msg) == nil && len(msg["result"]) > 4 {
			// A parent hash that is not hex: must be refused, never stored.
			msg["result"] = json.RawMessage(strings.Replace(string(msg["result"]), `"parentHash":"0x`, `"parentHash":"0xZZ`, 1))
			if b, err := json.Marshal(msg); err == nil {
				p.mu.Lock()
				p.bad++
				p.mu.Unlock()
				out = b
			}
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(out)
}

// Through a proxy with 10% errors, latency up to 2 s and some malformed
// answers, the chain still converges exactly, and the errors are counted.
func TestFaultyNodeConverges(t *testing.T) {
	const chainID = "it-chaos-proxy"
	node, head := catchupBacklog(t, chainID, 300)

	proxy := &faultyProxy{target: node.HTTPURL, errorRate: 0.10, maxLatency: 2 * time.Second, badRate: 0.03,
		rng: rand.New(rand.NewPCG(1, 2))}
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)

	bin := buildIndexer(t)
	port, err := localstack.FreePort()
	require.NoError(t, err)
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", port)
	cfgPath := writeConfig(t, chainID, srv.URL, metricsAddr, map[string]any{
		"rpc": map[string]any{"rate_limit": 0, "timeout": "3s", "backoff_initial": "50ms", "backoff_max": "500ms"},
	})
	w, err := localstack.Start("worker", filepath.Join(t.TempDir(), "worker.log"), bin, "worker", "--config", cfgPath)
	require.NoError(t, err)
	t.Cleanup(w.Stop)
	store := openStore(t)
	waitIndexed(t, store, chainID, head, 4*time.Minute)
	requireSameChain(t, rawConn(t), nodeClient(t, node.HTTPURL), chainID, 0, head)

	proxy.mu.Lock()
	served, failed, bad, slow := proxy.served, proxy.failed, proxy.bad, proxy.slow
	proxy.mu.Unlock()
	t.Logf("proxy: %d requests, %d failed, %d malformed, %d delayed", served, failed, bad, slow)
	require.Greater(t, failed, 0)
	require.Greater(t, bad, 0)
	metrics := testkit.Scrape(t, metricsAddr)
	for _, kind := range []string{"malformed", "transient"} {
		_, found := testkit.Find(t, metrics, "rpc_errors_total", map[string]string{"chain_id": "it-chaos-proxy", "endpoint": "local", "kind": kind})
		require.True(t, found, "rpc_errors_total{kind=%q}", kind)
	}
}
