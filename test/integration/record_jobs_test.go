package integration

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/tideline-dev/tideline/pkg/indexer/jobs/streamappend"
	"github.com/tideline-dev/tideline/pkg/indexer/jobs/tokenmeta"
	"github.com/tideline-dev/tideline/pkg/indexer/jobs/webhook"
	"github.com/tideline-dev/tideline/pkg/indexer/lifecycle"
	"github.com/tideline-dev/tideline/pkg/simchain"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// recordJobsChainID is the chain of the stream, token metadata and webhook
// histories; the replay test builds it with recordSettings, as here.
const recordJobsChainID = "replay-jobs"

// TestRecordReplayHistoriesJobs records, like TestRecordReplayHistories
// (the same opt-in variable), the side jobs' histories the corpus lacked,
// on the simulated chain (which emits every token standard's transfers):
// a StreamAppend run that appended events (streamappend-appended), a
// TokenMetadata run that asked tokens (tokenmeta-asked), and a
// subscription's WebhookDelivery from its start through a pause, a resume
// and its removal (webhook-delivered-removed).
func TestRecordReplayHistoriesJobs(t *testing.T) {
	dir := os.Getenv("TIDELINE_RECORD_HISTORIES")
	if dir == "" {
		t.Skip("opt-in recorder: set TIDELINE_RECORD_HISTORIES=<dir> to record replay histories")
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	const chainID = recordJobsChainID
	sc := simchain.DefaultConfig()
	sc.Length = 60
	sim, err := simchain.Start(context.Background(), sc)
	require.NoError(t, err)
	t.Cleanup(func() { sim.Close() })

	// The receiver checks signatures, so the subscription signs.
	const secretEnv, secret = "TIDELINE_RECORD_HOOK_SECRET", "rec-3b9d0f"
	t.Setenv(secretEnv, secret)
	recv := &hookReceiver{accept: true, secret: []byte(secret)}
	srv := httptest.NewServer(recv)
	t.Cleanup(srv.Close)

	store := openStore(t)
	tc := temporalClient(t)
	cfg := chainConfig(chainID, sim.HTTPURL())
	cfg.Chains[chainID] = recordSettings(cfg.Chains[chainID])
	cfg.Webhooks.PollInterval = 200 * time.Millisecond
	runWorker(t, cfg)
	deleteChainSchedulesAtEnd(t, chainID)
	waitIndexed(t, store, chainID, sim.Head(), 2*time.Minute)

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	subs := &lifecycle.Subscriptions{Store: store.Records(), Stream: store.Reader().Stream(), Temporal: tc, SearchAttributes: true}
	sub, err := subs.Add(ctx, webhook.Subscription{ChainID: chainID, URL: srv.URL + "/hooks", SecretEnv: secretEnv}, lifecycle.StartAt{})
	require.NoError(t, err)
	delivered := func(more int) {
		before, _, _, _ := recv.snapshot()
		_, err := sim.Jump(3) // new heights, so new events to deliver
		require.NoError(t, err)
		waitFor(t, time.Minute, fmt.Sprintf("%d more events delivered", more), func() (bool, string) {
			acc, _, _, _ := recv.snapshot()
			return len(acc) >= len(before)+more, fmt.Sprintf("%d accepted", len(acc))
		})
	}
	delivered(3)
	_, _, err = subs.SetState(ctx, sub.ID, webhook.Paused)
	require.NoError(t, err)
	waitFor(t, 30*time.Second, "the delivery paused", func() (bool, string) {
		var p webhook.Progress
		_, err := webhook.Query(ctx, tc, chainID, sub.ID, &p)
		return err == nil && p.State == webhook.Paused, fmt.Sprintf("%+v %v", p, err)
	})
	_, _, err = subs.SetState(ctx, sub.ID, webhook.Active)
	require.NoError(t, err)
	delivered(3)
	_, _, err = subs.SetState(ctx, sub.ID, webhook.Removed)
	require.NoError(t, err)
	id, run := findJobRun(t, tc, temporal.WebhookWorkflow, temporal.WebhookID(chainID, sub.ID), time.Minute,
		func(p webhook.Progress) bool { return p.State == webhook.Removed && p.Delivered >= 6 })
	writeHistory(t, tc, dir, "webhook-delivered-removed", id, run)

	// A StreamAppend run lasts streamappend.RunFor; a TokenMetadata run
	// comes every tokenmeta.Interval.
	id, run = findJobRun(t, tc, temporal.StreamAppendWorkflow, temporal.StreamWorkflowID(chainID), 3*streamappend.RunFor,
		func(r streamappend.Result) bool { return r.Appended > 0 })
	writeHistory(t, tc, dir, "streamappend-appended", id, run)
	id, run = findJobRun(t, tc, temporal.TokenMetadataWorkflow, temporal.TokenMetadataWorkflowID(chainID), 6*tokenmeta.Interval,
		func(r tokenmeta.Result) bool { return r.Tokens > 0 })
	writeHistory(t, tc, dir, "tokenmeta-asked", id, run)
}

// findJobRun is findRun for one chain's job: the oldest completed run of
// the workflow type whose ID begins with prefix (a Schedule appends the
// time to its workflows' IDs) and whose result satisfies match, waited
// for up to within.
func findJobRun[R any](t *testing.T, tc client.Client, workflowType, prefix string, within time.Duration, match func(R) bool) (id, run string) {
	t.Helper()
	var found recordedRun
	waitFor(t, within, "a matching "+workflowType+" run", func() (bool, string) {
		runs := listRuns(t, tc, fmt.Sprintf("WorkflowType = '%s' AND ExecutionStatus = 'Completed'", workflowType))
		for _, r := range runs {
			if !strings.HasPrefix(r.id, prefix) {
				continue
			}
			var res R
			require.NoError(t, tc.GetWorkflow(context.Background(), r.id, r.run).Get(context.Background(), &res))
			if match(res) {
				found = r
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d completed runs, none of %s matching", len(runs), prefix)
	})
	return found.id, found.run
}
