package workflow_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nexus-rpc/sdk-go/nexus"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/tideline-dev/tideline/pkg/config"
	indexactivity "github.com/tideline-dev/tideline/pkg/indexer/activity"
	"github.com/tideline-dev/tideline/pkg/indexer/worker"
	indexwf "github.com/tideline-dev/tideline/pkg/indexer/workflow"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// replayWorkflows builds the workflows as the worker does (worker.RunWith),
// for the chain a history was recorded on, with the settings it was
// recorded with: recordChainID and recordSettings in
// test/integration/record_test.go for chain replay, recordRangeChainID
// and recordRangeSettings in record_ranges_test.go for chain
// replay-range, which these values must equal.
func replayWorkflows(t *testing.T, chainID string) (*indexwf.Workflows, []worker.Job) {
	ch := config.DefaultChain()
	ch.StartHeight = 0
	ch.BlockTime = time.Minute
	ch.HeadScan.CatchupThreshold = 20
	ch.HeadScan.BatchSize = 4
	ch.Scheduler.BatchSize = 10
	ch.Scheduler.RateLimit = 50
	ch.Scheduler.MaxInFlight = 20
	ch.Scheduler.ContinueAsNewAfter = 30
	switch chainID {
	case "replay", "replay-traces", "replay-jobs":
	case "replay-range":
		ch = replayRangeChain(ch)
	default:
		t.Fatalf("no recorded settings for chain %q", chainID)
	}
	o := temporal.NewOptions(chainID, ch.Index.ActivityTimeout)
	return &indexwf.Workflows{Chain: indexwf.NewChainSetup(o, ch)}, worker.ReplayJobs(chainID, o, ch)
}

// replayRangeChain is the chain replay-range of the range, aggregate,
// prune and mid-run pause histories: recordRangeSettings in
// test/integration/record_ranges_test.go, applied to the replay chain's
// settings (ch) as there.
func replayRangeChain(ch config.Chain) config.Chain {
	ch.ConfirmationDepth = 4
	ch.Scheduler.RangeSize = 10
	ch.Scheduler.SingleHeights = 4
	ch.Scheduler.MaxInFlight = 40
	ch.Scheduler.ContinueAsNewAfter = 200
	ch.Scheduler.HeightsPerSecond = 20
	return ch
}

// replayDir holds histories recorded from the real dev server (see its
// README.md): <workflow>-<scenario>[-pre-<change>].json.
const replayDir = "testdata/replay"

// recordedHistories are the scenarios that must be present, so that a lost
// file fails the test instead of shrinking it. The -pre-<change> ones were
// recorded with the code from before that GetVersion change.
var recordedHistories = []string{
	"headscan-normal",
	"headscan-start-scheduler",
	"headscan-scheduler-running",
	"scheduler-continue-as-new",
	"scheduler-finish",
	"gapscan-gap",
	"indexblock-index",
	"indexblock-already-indexed",
	"indexblock-live",
	"headscan-normal-pre-push-status",
	"gapscan-gap-pre-push-status",
	"scheduler-continue-as-new-pre-scheduler-drain",
	"scheduler-finish-pre-scheduler-drain",
	"scheduler-continue-as-new-pre-scheduler-shrink",
	"scheduler-finish-pre-scheduler-shrink",
	"scheduler-continue-as-new-pre-scheduler-pause",
	"scheduler-finish-pre-scheduler-pause",
	"scheduler-pause-resume",
	"scheduler-pause-resume-pre-scheduler-pause",
	"scheduler-ranges",
	"scheduler-pause-midrun",
	"indexrange-range",
	"indexrange-handoff",
	"indexblock-handed-off",
	"aggregate-catchup",
	"prune-pruned",
	"tracebackfill-pass",
	"streamappend-appended",
	"tokenmeta-asked",
	"webhook-delivered-removed",
	"streamappend-appended-pre-job-packages",
	"tokenmeta-asked-pre-job-packages",
	"webhook-delivered-removed-pre-job-packages",
	"scheduler-continue-as-new-pre-scheduler-start-activity",
	"scheduler-finish-pre-scheduler-start-activity",
	"scheduler-pause-resume-pre-scheduler-start-activity",
	"scheduler-ranges-pre-scheduler-start-activity",
	"scheduler-pause-midrun-pre-scheduler-start-activity",
}

// Every recorded history replays on today's workflows without a
// nondeterminism error: a change to a workflow that may be running must
// keep old histories replaying (workflow.GetVersion), and this is where a
// change that does not fails.
func TestReplayRecordedHistories(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(replayDir, "*.json"))
	require.NoError(t, err)
	names := map[string]bool{}
	for _, f := range files {
		names[strings.TrimSuffix(filepath.Base(f), ".json")] = true
	}
	for _, n := range recordedHistories {
		require.True(t, names[n], "%s/%s.json is missing", replayDir, n)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		t.Run(name, func(t *testing.T) {
			if _, change, ok := strings.Cut(name, "-pre-"); ok {
				// A pre-change history holding the change's marker would
				// replay the new branch and prove nothing.
				require.NotContains(t, versionMarkers(t, f), change, "%s was recorded after %s", name, change)
			}
			r := sdkworker.NewWorkflowReplayer()
			wfs, jobs := replayWorkflows(t, historyChain(t, f))
			worker.Register(replayRegistry{r}, wfs, &indexactivity.Activities{}, jobs...)
			require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(quietLogger, f))
		})
	}
}

// historyChain is the chain a history was recorded on: the chain_id of
// its workflow's input (every workflow input has one).
func historyChain(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	h, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
	require.NoError(t, err)
	started := h.GetEvents()[0].GetWorkflowExecutionStartedEventAttributes()
	require.NotNil(t, started, "%s does not begin with the workflow's start", path)
	var in struct {
		ChainID string `json:"chain_id"`
	}
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(started.GetInput(), &in))
	require.NotEmpty(t, in.ChainID, "%s: no chain_id in the input", path)
	return in.ChainID
}

// versionMarkers lists the change IDs of the GetVersion markers in a
// history file.
func versionMarkers(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	h, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
	require.NoError(t, err)
	var ids []string
	for _, ev := range h.GetEvents() {
		m := ev.GetMarkerRecordedEventAttributes()
		if ev.GetEventType() != enumspb.EVENT_TYPE_MARKER_RECORDED || m.GetMarkerName() != "Version" {
			continue
		}
		var id string
		require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(m.GetDetails()["change-id"], &id))
		ids = append(ids, id)
	}
	return ids
}

// replayRegistry lets worker.Register, the worker's own registration,
// register on a replayer, so that the replayed workflows carry the
// production names. A replayer runs no activities (their results are in
// the history), so activity and Nexus registrations are dropped.
type replayRegistry struct{ sdkworker.WorkflowReplayer }

func (replayRegistry) RegisterActivity(any)                                         {}
func (replayRegistry) RegisterActivityWithOptions(any, activity.RegisterOptions)    {}
func (replayRegistry) RegisterDynamicActivity(any, activity.DynamicRegisterOptions) {}
func (replayRegistry) RegisterNexusService(*nexus.Service)                          {}
