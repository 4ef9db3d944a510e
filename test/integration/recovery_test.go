package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/tideline-dev/tideline/pkg/localstack"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// holdOnce sits in front of the node for every worker of a chain, one
// proxy URL per worker: once armed with a height, the first call for that
// block's receipts, whichever worker makes it, is held (no answer) until
// the worker's connection ends or the test does, and says which worker
// it was. Only IndexBlock asks for receipts (a scan's head check fetches
// the block alone), so the worker held is the one running the height's
// attempt. Every other call passes.
type holdOnce struct {
	target string

	mu      sync.Mutex
	height  string // hex, as a block call carries it; "" until armed
	hash    string // the block's hash, from the first answer for it
	holding int    // the worker whose call is held, -1 while none was
	caught  chan int
	release chan struct{}
}

func newHoldOnce(target string) *holdOnce {
	return &holdOnce{target: target, holding: -1, caught: make(chan int, 1), release: make(chan struct{})}
}

// arm makes height the one to hold.
func (h *holdOnce) arm(height uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.height = hexutil.EncodeUint64(height)
}

// proxy is the URL worker i is to use.
func (h *holdOnce) proxy(t *testing.T, i int) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if h.take(i, body) {
			select {
			case <-r.Context().Done(): // the worker is gone
				return
			case <-h.release:
			}
		}
		resp, err := http.Post(h.target, "application/json", bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		answer, err := io.ReadAll(resp.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		h.learn(body, answer)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(answer)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// messages reads a single call or answer, or a batch of them.
func messages(b []byte) []rpcMessage {
	var many []rpcMessage
	if json.Unmarshal(b, &many) == nil {
		return many
	}
	var one rpcMessage
	if json.Unmarshal(b, &one) == nil {
		return []rpcMessage{one}
	}
	return nil
}

// learn remembers the armed block's hash from an answer that carries it.
func (h *holdOnce) learn(req, answer []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.height == "" || h.hash != "" {
		return
	}
	answers := map[string]json.RawMessage{}
	for _, a := range messages(answer) {
		answers[string(a.ID)] = a.Result
	}
	for _, c := range messages(req) {
		if c.Method == "eth_getBlockByNumber" && len(c.Params) > 0 && c.Params[0] == h.height {
			var b struct {
				Hash string `json:"hash"`
			}
			if json.Unmarshal(answers[string(c.ID)], &b) == nil && b.Hash != "" {
				h.hash = b.Hash
			}
		}
	}
}

// take tells whether worker's request is the one to hold.
func (h *holdOnce) take(worker int, body []byte) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.hash == "" || h.holding >= 0 {
		return false
	}
	for _, c := range messages(body) {
		if c.Method == "eth_getBlockReceipts" && len(c.Params) == 1 && c.Params[0] == h.hash {
			h.holding = worker
			h.caught <- worker
			return true
		}
	}
	return false
}

// Two worker processes follow a chain with 1-second blocks. The worker
// that takes one live height is killed with SIGKILL, or frozen with
// SIGSTOP (its activity lost: Temporal sees it started, no worker runs
// it), while it fetches that height. The other worker indexes the height
// within seconds: the attempt's heartbeat timeout
// (index.heartbeat_timeout, 5 s), not its start-to-close timeout (2 min
// here, as by default), decides. Nothing is lost or stored twice.
func TestAWorkerLostMidHeightIsTakenOverInSeconds(t *testing.T) {
	for _, tc := range []struct {
		name, chainID string
		signal        syscall.Signal
	}{{"SIGKILL", "it-lost-kill", syscall.SIGKILL}, {"SIGSTOP", "it-lost-stop", syscall.SIGSTOP}} {
		t.Run(tc.name, func(t *testing.T) { lostMidHeight(t, tc.chainID, tc.signal) })
	}
}

func lostMidHeight(t *testing.T, chainID string, sig syscall.Signal) {
	node, err := localstack.StartAnvil(filepath.Join(stack.dir, chainID), localstack.AnvilOptions{BlockTime: time.Second})
	require.NoError(t, err)
	t.Cleanup(node.Stop)
	traffic(t, node.HTTPURL)
	hold := newHoldOnce(node.HTTPURL)
	t.Cleanup(func() { close(hold.release) })

	bin := buildIndexer(t)
	store := openStore(t)
	workers := make([]*localstack.Process, 2)
	for i := range workers {
		port, err := localstack.FreePort()
		require.NoError(t, err)
		cfgPath := writeConfig(t, chainID, hold.proxy(t, i), fmt.Sprintf("127.0.0.1:%d", port), map[string]any{
			// The defaults: only the heartbeat can make this quick.
			"index": map[string]any{"activity_timeout": "2m", "heartbeat_timeout": "5s"},
		})
		workers[i] = startWorkerProcess(t, fmt.Sprintf("worker-%d", i), bin, cfgPath)
	}
	// Both running and caught up, then a live height a few blocks ahead,
	// which one of them takes as it takes every new head.
	waitIndexed(t, store, chainID, nodeHead(t, node.HTTPURL), 2*time.Minute)
	held := nodeHead(t, node.HTTPURL) + 3
	hold.arm(held)
	var victim int
	select {
	case victim = <-hold.caught:
	case <-time.After(2 * time.Minute):
		t.Fatalf("no worker fetched height %d", held)
	}
	lost := time.Now()
	if sig == syscall.SIGKILL {
		workers[victim].Kill()
	} else {
		require.NoError(t, syscall.Kill(-workers[victim].Pid(), syscall.SIGSTOP))
		// Before the process's own cleanup (last in, first out): a frozen
		// process would not hear its SIGTERM.
		t.Cleanup(func() { _ = syscall.Kill(-workers[victim].Pid(), syscall.SIGCONT) })
	}
	t.Logf("worker-%d %s while fetching the receipts of height %d", victim, sig, held)

	// The bound is the design's, not a speed figure: a minute, half the
	// start-to-close timeout (2 min) that would decide without the
	// heartbeat, twelve times its timeout (5 s). So it is not scaled to
	// the box: a slow box must not hide a lost heartbeat.
	waitWithin(t, time.Minute, fmt.Sprintf("height %d indexed", held), indexedUpTo(store, chainID, held))
	tookOver := time.Since(lost)
	head := nodeHead(t, node.HTTPURL)
	// Later heights too: a frozen worker still holds its polls, so the
	// server hands it workflow tasks, each lost for ShortTaskTimeout; how
	// long the head takes is logged (docs/performance.md, "Recovery").
	waitIndexed(t, store, chainID, head, 2*time.Minute)
	backAtHead := time.Since(lost)
	t.Logf("after %s: height %d indexed in %.1f s; the watermark at the head it saw then (%d) in %.1f s",
		sig, held, tookOver.Seconds(), head, backAtHead.Seconds())
	logHistory(t, temporal.IndexBlockID(chainID, held), lost)
	logRuns(t, chainID, held, head, lost)
	requireSameChain(t, rawConn(t), nodeClient(t, node.HTTPURL), chainID, 0, head)
}

// logRuns logs when each height's workflow started and closed, from the
// loss, and which attempt indexed it.
func logRuns(t *testing.T, chainID string, from, to uint64, since time.Time) {
	t.Helper()
	var b strings.Builder
	for h := from; h <= to; h++ {
		d, err := temporalClient(t).DescribeWorkflowExecution(context.Background(), temporal.IndexBlockID(chainID, h), "")
		if err != nil {
			fmt.Fprintf(&b, "\n  height %d: %v", h, err)
			continue
		}
		info := d.GetWorkflowExecutionInfo()
		fmt.Fprintf(&b, "\n  height %d: started %+6.1f s, closed %+6.1f s (%s), %d history events", h,
			info.GetStartTime().AsTime().Sub(since).Seconds(), info.GetCloseTime().AsTime().Sub(since).Seconds(),
			info.GetStatus(), info.GetHistoryLength())
	}
	t.Logf("heights %d-%d, from the loss:%s", from, to, b.String())
}

// logHistory logs the events of a workflow's latest run with their time
// after since: where a recovery's seconds went.
func logHistory(t *testing.T, workflowID string, since time.Time) {
	t.Helper()
	it := temporalClient(t).GetWorkflowHistory(context.Background(), workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var b strings.Builder
	for it.HasNext() {
		e, err := it.Next()
		require.NoError(t, err)
		fmt.Fprintf(&b, "\n  %+6.1f s  %s", e.GetEventTime().AsTime().Sub(since).Seconds(), e.GetEventType())
		if a := e.GetActivityTaskStartedEventAttributes(); a != nil {
			fmt.Fprintf(&b, " (attempt %d, %s)", a.GetAttempt(), a.GetIdentity())
		}
		if a := e.GetWorkflowTaskStartedEventAttributes(); a != nil {
			fmt.Fprintf(&b, " (%s)", a.GetIdentity())
		}
		if a := e.GetWorkflowTaskTimedOutEventAttributes(); a != nil {
			fmt.Fprintf(&b, " (%s)", a.GetTimeoutType())
		}
	}
	t.Logf("%s, from the loss:%s", workflowID, b.String())
}
