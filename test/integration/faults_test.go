package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"gopkg.in/yaml.v3"

	"github.com/tideline-dev/tideline/internal/testkit"
	"github.com/tideline-dev/tideline/pkg/indexer/activity"
	"github.com/tideline-dev/tideline/pkg/localstack"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// indexerBin is the real binary, built once for the package: a build
// links for seconds of CPU, and every test runs the same code.
var indexerBin struct {
	once sync.Once
	path string
	err  error
}

// buildIndexer builds the real binary, to be run and killed as a process.
func buildIndexer(t *testing.T) string {
	t.Helper()
	indexerBin.once.Do(func() {
		out := filepath.Join(stack.dir, "bin", "indexer")
		cmd := exec.Command("go", "build", "-o", out, "github.com/tideline-dev/tideline/app/indexer")
		cmd.Stderr = os.Stderr
		indexerBin.path, indexerBin.err = out, cmd.Run()
	})
	require.NoError(t, indexerBin.err, "go build ./app/indexer")
	return indexerBin.path
}

// startWorkerProcess runs the built binary as a worker process stopped at the
// test's end; a failing test prints the end of the worker's log, which
// is the only account of what a process that never became ready did.
func startWorkerProcess(t *testing.T, name, bin, cfgPath string) *localstack.Process {
	t.Helper()
	forgetChainsAtEnd(t)
	w, err := localstack.Start(name, filepath.Join(t.TempDir(), name+".log"), bin, "worker", "--config", cfgPath)
	require.NoError(t, err)
	t.Cleanup(func() {
		w.Stop()
		if t.Failed() {
			t.Logf("%s's log (last 8 kB):\n%s", name, w.Tail(8<<10))
		}
	})
	return w
}

// writeConfig writes a YAML config file for a worker process; extra keys
// are laid over the chain's settings.
func writeConfig(t *testing.T, chainID, rpcURL, metricsListen string, extra map[string]any) string {
	t.Helper()
	claimChain(t, chainID)
	doc := map[string]any{
		"log":      map[string]any{"format": "json", "level": "warn"},
		"metrics":  map[string]any{"listen": metricsListen},
		"temporal": map[string]any{"host_port": stack.temporal.HostPort, "namespace": "default"},
		"clickhouse": map[string]any{
			"addr": stack.ch.Addr, "database": database, "username": "default",
		},
		"chains": map[string]any{chainID: map[string]any{
			"type":       "ethereum",
			"block_time": "1s",
			"endpoints":  map[string]any{"local": rpcURL},
			"rpc":        map[string]any{"rate_limit": 0},
			"headscan":   map[string]any{"interval": "1s"},
			"index":      map[string]any{"activity_timeout": "10s"},
			// The seed's scheduler, one workflow per height; an extra
			// "scheduler" replaces this (say range_size there too).
			"scheduler": map[string]any{"range_size": 0},
		}},
	}
	chain := doc["chains"].(map[string]any)[chainID].(map[string]any)
	for k, v := range extra {
		chain[k] = v
	}
	b, err := yaml.Marshal(doc)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(path, b, 0o600))
	return path
}

// Killing the worker with SIGKILL mid-run and starting it again loses no
// height and duplicates none. The backlog (321 heights, HeadScan's direct
// path) leaves the kill ~200 heights of room after the first 100 and the
// metric checks, which read at scrape time.
func TestWorkerSIGKILLLosesNothing(t *testing.T) {
	const chainID = "it-kill"
	node, head := catchupBacklog(t, chainID, 300)

	bin := buildIndexer(t)
	port, err := localstack.FreePort()
	require.NoError(t, err)
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", port)
	cfgPath := writeConfig(t, chainID, node.HTTPURL, metricsAddr, nil)
	logDir := t.TempDir()
	store := openStore(t)

	first, err := localstack.Start("worker-1", filepath.Join(logDir, "worker-1.log"), bin, "worker", "--config", cfgPath)
	require.NoError(t, err)
	waitFor(t, time.Minute, "some heights indexed", func() (bool, string) {
		last, found, err := store.LastIndexed(context.Background(), chainID)
		if err != nil {
			return false, err.Error()
		}
		return found && last >= 100, fmt.Sprintf("last=%d", last)
	})
	// The metrics endpoint serves the progress series while it runs.
	for _, name := range []string{"indexer_watermark_height", "indexer_head_height", "indexer_blocks_indexed_total", "rpc_requests_total"} {
		waitFor(t, 30*time.Second, "metric "+name, func() (bool, string) {
			_, found := testkit.Find(t, testkit.Scrape(t, metricsAddr), name, map[string]string{"chain_id": chainID})
			return found, "absent"
		})
	}
	// And the disk series of its ClickHouse (on loopback: free space known).
	for _, name := range []string{"indexer_clickhouse_live_bytes", "indexer_clickhouse_bytes_per_height", "indexer_clickhouse_free_bytes"} {
		waitFor(t, 30*time.Second, "metric "+name, func() (bool, string) {
			v, found := testkit.Find(t, testkit.Scrape(t, metricsAddr), name, nil)
			return found && v > 0, fmt.Sprintf("found=%v value=%g", found, v)
		})
	}
	first.Kill()
	watermarkAtKill, _, err := store.Watermark(context.Background(), chainID, 0)
	require.NoError(t, err)
	require.Less(t, watermarkAtKill, head, "the kill must land mid-run")
	t.Logf("SIGKILL at watermark %d of %d", watermarkAtKill, head)

	second, err := localstack.Start("worker-2", filepath.Join(logDir, "worker-2.log"), bin, "worker", "--config", cfgPath)
	require.NoError(t, err)
	t.Cleanup(second.Stop)
	waitIndexed(t, store, chainID, head, 3*time.Minute)
	requireSameChain(t, rawConn(t), nodeClient(t, node.HTTPURL), chainID, 0, head)
}

// corruptingProxy forwards JSON-RPC to a node but answers the first
// `times` requests for one block with a malformed block.
type corruptingProxy struct {
	target string
	height uint64
	mu     sync.Mutex
	times  int
	served int
}

func (p *corruptingProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params []any           `json:"params"`
	}
	if json.Unmarshal(body, &req) == nil && req.Method == "eth_getBlockByNumber" && len(req.Params) > 0 &&
		req.Params[0] == hexutil.EncodeUint64(p.height) && p.take() {
		// A hash that is not hex: the adapter must refuse it.
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"number":"%s","hash":"0xnothex","parentHash":"0x00","timestamp":"0x1","transactions":[]}}`,
			req.ID, hexutil.EncodeUint64(p.height))
		return
	}
	resp, err := http.Post(p.target, "application/json", bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

func (p *corruptingProxy) take() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.served >= p.times {
		return false
	}
	p.served++
	return true
}

// A malformed answer is a typed error; the height is retried, not skipped,
// and what is finally stored is the node's real block.
func TestMalformedAnswerIsRetriedNotSkipped(t *testing.T) {
	t.Parallel() // see README.md, "Serial and parallel tests"
	const chainID = "it-malformed"
	const target = 5
	node, err := localstack.StartAnvil(filepath.Join(stack.dir, chainID), localstack.AnvilOptions{})
	require.NoError(t, err)
	t.Cleanup(node.Stop)
	makeTraffic(t, node.HTTPURL, localstack.AnvilDefaultKey, 10)
	proxy := &corruptingProxy{target: node.HTTPURL, height: target, times: 2}
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)

	store := openStore(t)
	runWorker(t, chainConfig(chainID, srv.URL))
	head := nodeHead(t, node.HTTPURL)
	waitIndexed(t, store, chainID, head, 2*time.Minute)
	requireSameChain(t, rawConn(t), nodeClient(t, node.HTTPURL), chainID, 0, head)
	proxy.mu.Lock()
	require.Equal(t, 2, proxy.served, "both malformed answers were served")
	proxy.mu.Unlock()

	// The history of that height shows the retries and the typed failure.
	tc := temporalClient(t)
	iter := tc.GetWorkflowHistory(context.Background(), temporal.IndexBlockID(chainID, target), "", false,
		enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var attempts int32
	var lastFailureType string
	var lastTimedOut bool
	for iter.HasNext() {
		ev, err := iter.Next()
		require.NoError(t, err)
		if a := ev.GetActivityTaskStartedEventAttributes(); a != nil {
			attempts = a.GetAttempt()
			lastFailureType = a.GetLastFailure().GetApplicationFailureInfo().GetType()
			lastTimedOut = a.GetLastFailure().GetTimeoutFailureInfo() != nil
		}
	}
	// The history keeps the last attempt and the failure before it: two
	// malformed answers, then success. On a box too slow for the
	// activity's deadline (one core for the whole suite) an attempt can
	// also time out, and only a timeout may add to them.
	if attempts > 3 {
		require.True(t, lastTimedOut || lastFailureType == activity.ErrTypeMalformedResponse,
			"attempt %d followed a failure that was neither malformed nor a timeout: %q", attempts, lastFailureType)
		t.Logf("%d attempts: the two malformed answers and %d timed out", attempts, attempts-3)
	} else {
		require.Equal(t, int32(3), attempts, "two malformed answers, then success")
		require.Equal(t, activity.ErrTypeMalformedResponse, lastFailureType)
	}
	require.False(t, strings.Contains(lastFailureType, "http://"), "no URL in failures")
}
