package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/tideline-dev/tideline/internal/testkit"
	"github.com/tideline-dev/tideline/pkg/indexer/jobs/webhook"
	"github.com/tideline-dev/tideline/pkg/localstack"
	"github.com/tideline-dev/tideline/pkg/stream"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// hookReceiver is a webhook receiver on 127.0.0.1 that refuses (503)
// until told to accept, checks every signature, and keeps what it
// accepted in arrival order.
type hookReceiver struct {
	mu       sync.Mutex
	secret   []byte
	accept   bool
	refused  int
	badSig   int
	accepted []stream.Event
	headers  []http.Header
}

func (h *hookReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil || !h.accept {
		h.refused++
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	if webhook.Verify(h.secret, r.Header.Get(webhook.HeaderTimestamp), body, r.Header.Get(webhook.HeaderSignature), time.Now(), 5*time.Minute) != nil {
		h.badSig++
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	var e stream.Event
	if json.Unmarshal(body, &e) != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	h.accepted = append(h.accepted, e)
	h.headers = append(h.headers, r.Header.Clone())
	w.WriteHeader(http.StatusNoContent)
}

func (h *hookReceiver) snapshot() (accepted []stream.Event, headers []http.Header, refused, badSig int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]stream.Event(nil), h.accepted...), append([]http.Header(nil), h.headers...), h.refused, h.badSig
}

// A subscription added with the command to a chain a real worker indexes
// and streams: its receiver refuses for a while, then accepts. It gets
// every event of the stream from seq 1, once each, in order, signed,
// each the stream's own object (checked against what the stream serves);
// pause and resume go through the command and the workflow; the URL's
// token and the secret are in no history of the delivery's workflow, and
// the metrics name the subscription, not the URL.
func TestWebhookDeliversEveryEventInOrder(t *testing.T) {
	const chainID = "it-webhook"
	const secretEnv = "IT_WEBHOOK_SECRET"
	const secret = "whsec-7d1f0c2e9b"
	const token = "tok-51ac0e77"
	t.Setenv(secretEnv, secret)
	node, err := localstack.StartAnvil(filepath.Join(stack.dir, chainID), localstack.AnvilOptions{BlockTime: time.Second})
	require.NoError(t, err)
	t.Cleanup(node.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	require.NoError(t, nodeClient(t, node.HTTPURL).CallContext(ctx, nil, "anvil_mine", hexutil.Uint64(20)))

	recv := &hookReceiver{secret: []byte(secret)}
	srv := httptest.NewServer(recv)
	t.Cleanup(srv.Close)
	hookURL := srv.URL + "/hooks/" + token + "?key=" + token

	cfg := chainConfig(chainID, node.HTTPURL)
	port, err := localstack.FreePort()
	require.NoError(t, err)
	cfg.Metrics.Listen = fmt.Sprintf("127.0.0.1:%d", port)
	cfg.Webhooks.PollInterval = 200 * time.Millisecond
	cfg.Webhooks.Retry.InitialInterval = 200 * time.Millisecond
	cfg.Webhooks.Retry.BackoffCoefficient = 2
	cfg.Webhooks.Retry.MaximumInterval = 2 * time.Second
	store := openStore(t)
	runWorker(t, cfg)
	waitFor(t, time.Minute, "the stream to hold 15 events", func() (bool, string) {
		tail, err := store.Stream().StreamTail(ctx, chainID, 1)
		if err != nil || len(tail) == 0 {
			return false, fmt.Sprint(err)
		}
		return tail[0].Seq >= 15, fmt.Sprintf("seq %d", tail[0].Seq)
	})

	bin := buildIndexer(t)
	cfgPath := writeConfig(t, chainID, node.HTTPURL, "", nil)
	run := func(args ...string) string {
		out, err := exec.CommandContext(ctx, bin, append(append([]string{"subscription"}, args...), "--config", cfgPath)...).CombinedOutput()
		require.NoError(t, err, "indexer subscription %s: %s", strings.Join(args, " "), out)
		require.NotContains(t, string(out), token, "the URL's token is never printed")
		return string(out)
	}
	out := run("add", chainID, "--url", hookURL, "--secret-env", secretEnv, "--from-seq", "1", "--include", "transactions,logs")
	m := regexp.MustCompile(`subscription ([0-9a-f]{12}) added`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	id := m[1]
	wfID := temporal.WebhookID(chainID, id)

	// Refused for a while: retried with backoff, nothing accepted.
	waitFor(t, time.Minute, "the receiver to refuse 4 POSTs", func() (bool, string) {
		_, _, refused, _ := recv.snapshot()
		return refused >= 4, fmt.Sprintf("%d refused", refused)
	})
	recv.mu.Lock()
	recv.accept = true
	recv.mu.Unlock()

	tail, err := store.Stream().StreamTail(ctx, chainID, 1)
	require.NoError(t, err)
	target := tail[0].Seq + 5 // and the events appended meanwhile
	waitFor(t, time.Minute, fmt.Sprintf("events up to seq %d accepted", target), func() (bool, string) {
		acc, _, _, _ := recv.snapshot()
		if len(acc) == 0 {
			return false, "none"
		}
		return acc[len(acc)-1].Seq >= target, fmt.Sprintf("up to seq %d", acc[len(acc)-1].Seq)
	})

	acc, headers, refused, badSig := recv.snapshot()
	require.Zero(t, badSig, "every signature checks")
	require.GreaterOrEqual(t, refused, 4)
	want, err := stream.ReadEvents(ctx, store.Reader().Stream(), chainID, 0, len(acc), stream.Include{Transactions: true, Logs: true})
	require.NoError(t, err)
	seen := map[uint64]bool{}
	for i, e := range acc {
		require.Equal(t, uint64(i+1), e.Seq, "in order from seq 1, no gap, none twice")
		require.False(t, seen[e.Seq])
		seen[e.Seq] = true
		require.Equal(t, strconv.FormatUint(e.Seq, 10), headers[i].Get(webhook.HeaderSeq))
		require.Equal(t, id, headers[i].Get(webhook.HeaderSubscription))
		if i < len(want) {
			require.Equal(t, want[i], e, "seq %d is the stream's own event", e.Seq)
		}
	}
	require.GreaterOrEqual(t, len(want), 15)

	// The metrics: by subscription, never the URL.
	g := testkit.Scrape(t, cfg.Metrics.Listen)
	labels := map[string]string{"chain_id": chainID, "subscription": id}
	require.GreaterOrEqual(t, testkit.Sum(t, g, "indexer_webhook_delivered_total", labels), float64(len(want)))
	require.GreaterOrEqual(t, testkit.Sum(t, g, "indexer_webhook_failed_attempts_total", labels), 4.0)

	// Pause and resume, through the command.
	require.Contains(t, run("pause", id), "paused")
	waitFor(t, 30*time.Second, "the delivery paused", func() (bool, string) {
		var p webhook.Progress
		_, err := webhook.Query(ctx, temporalClient(t), chainID, id, &p)
		return err == nil && p.State == webhook.Paused, fmt.Sprintf("%+v %v", p, err)
	})
	var listed []map[string]any
	require.NoError(t, json.Unmarshal([]byte(run("list", chainID, "--json")), &listed))
	require.Len(t, listed, 1)
	require.Equal(t, "paused", listed[0]["state"])
	require.Equal(t, "paused", listed[0]["delivery"])
	pausedAt, _, _, _ := recv.snapshot()
	run("resume", id)
	waitFor(t, time.Minute, "deliveries after the resume", func() (bool, string) {
		acc, _, _, _ := recv.snapshot()
		return len(acc) > len(pausedAt)+2, fmt.Sprintf("%d accepted, %d at the pause", len(acc), len(pausedAt))
	})
	acc, _, _, _ = recv.snapshot()
	for i, e := range acc {
		require.Equal(t, uint64(i+1), e.Seq, "in order across the pause")
	}

	run("remove", id)
	waitFor(t, 30*time.Second, "the delivery to end", func() (bool, string) {
		d, err := temporalClient(t).DescribeWorkflowExecution(ctx, wfID, "")
		if err != nil {
			return false, err.Error()
		}
		st := d.GetWorkflowExecutionInfo().GetStatus()
		return st == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, st.String()
	})

	// Neither the token nor the secret is in any event of the workflow's
	// history: inputs, results, failures, memo.
	iter := temporalClient(t).GetWorkflowHistory(ctx, wfID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	events := 0
	for iter.HasNext() {
		ev, err := iter.Next()
		require.NoError(t, err)
		b, err := protojson.Marshal(ev)
		require.NoError(t, err)
		require.NotContains(t, string(b), token, "event %d (%s)", ev.GetEventId(), ev.GetEventType())
		require.NotContains(t, string(b), secret, "event %d (%s)", ev.GetEventId(), ev.GetEventType())
		require.NotContains(t, string(b), "/hooks/", "event %d (%s)", ev.GetEventId(), ev.GetEventType())
		events++
	}
	require.Greater(t, events, 5)
}
