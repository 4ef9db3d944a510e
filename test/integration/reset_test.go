package integration

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/tideline-dev/tideline/pkg/chain"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/localstack"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// A scheduler given a range far above the real chain (what a single
// phantom head did, issue 9) holds the chain's live heights hostage: they
// fall in its range, so HeadScan leaves them to it, and it works on
// heights that do not exist. `indexer scheduler reset` frees the chain:
// the dry run lists, --yes stops the scheduler and its window, nothing
// stored is touched, and the live heights are indexed again.
func TestSchedulerResetFreesAChain(t *testing.T) {
	const chainID = "it-reset"
	node, err := localstack.StartAnvil(filepath.Join(stack.dir, chainID), localstack.AnvilOptions{BlockTime: time.Second})
	require.NoError(t, err)
	t.Cleanup(node.Stop)
	cfg := chainConfig(chainID, node.HTTPURL)
	ch := cfg.Chains[chainID]
	// A small window: the test is about freeing it.
	ch.Scheduler.BatchSize, ch.Scheduler.MaxInFlight = 10, 20
	cfg.Chains[chainID] = ch
	runWorker(t, cfg)
	store := openStore(t)
	head := nodeHead(t, node.HTTPURL)
	waitIndexed(t, store, chainID, head, time.Minute)

	// The scheduler HeadScan starts for a head 10,000,000 too high.
	ctx := context.Background()
	tc := temporalClient(t)
	phantom := head + 10_000_000
	_, err = tc.ExecuteWorkflow(ctx, temporal.NewOptions(chainID, ch.Index.ActivityTimeout).SchedulerStart(), temporal.SchedulerWorkflow,
		types.SchedulerInput{ChainID: chainID, Head: phantom, Remaining: []chain.HeightRange{{From: head + 1, To: phantom}}})
	require.NoError(t, err)
	waitFor(t, time.Minute, "the live heights stuck behind the scheduler", func() (bool, string) {
		now := nodeHead(t, node.HTTPURL)
		last, _, err := store.LastIndexed(ctx, chainID)
		require.NoError(t, err)
		return now >= head+5 && last <= head+1, fmt.Sprintf("node head %d, newest indexed %d", now, last)
	})

	bin := buildIndexer(t)
	cfgPath := writeConfig(t, chainID, node.HTTPURL, "", nil)
	reset := func(args ...string) string {
		out, err := exec.Command(bin, append([]string{"scheduler", "reset", chainID, "--config", cfgPath, "--log-level", "warn"}, args...)...).CombinedOutput()
		require.NoError(t, err, "%s", out)
		return string(out)
	}
	out := reset()
	require.Contains(t, out, "would stop the scheduler "+temporal.SchedulerID(chainID))
	requireSchedulerStatus(t, chainID, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING)

	out = reset("--yes")
	require.Contains(t, out, "stopped the scheduler "+temporal.SchedulerID(chainID))
	requireSchedulerStatus(t, chainID, enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED)
	// What still runs are the live heights' own workflows, never the
	// scheduler's phantom window.
	requireNoIndexingAbove(t, chainID, nodeHead(t, node.HTTPURL)+1)

	head2 := nodeHead(t, node.HTTPURL)
	waitIndexed(t, store, chainID, head2, time.Minute)
	last, _, err := store.LastIndexed(ctx, chainID)
	require.NoError(t, err)
	require.Less(t, last, head2+10, "no phantom height was indexed")
	requireSameChain(t, rawConn(t), nodeClient(t, node.HTTPURL), chainID, 0, head2)
}

func requireSchedulerStatus(t *testing.T, chainID string, want enumspb.WorkflowExecutionStatus) {
	t.Helper()
	d, err := temporalClient(t).DescribeWorkflowExecution(context.Background(), temporal.SchedulerID(chainID), "")
	require.NoError(t, err)
	got := d.GetWorkflowExecutionInfo().GetStatus()
	require.Equal(t, want, got, "scheduler %s is %s", temporal.SchedulerID(chainID), strings.ToLower(got.String()))
}

// requireNoIndexingAbove asserts that no scheduler runs for the chain and
// that its running indexing workflows are single heights no higher than
// top (the live heights' own), never a range or a height that does not
// exist. It lists them as the reset command's dry run does.
func requireNoIndexingAbove(t *testing.T, chainID string, top uint64) {
	t.Helper()
	left, err := temporal.ResetScheduler(context.Background(), temporalClient(t), "default", chainID, true)
	require.NoError(t, err)
	require.False(t, left.Scheduler, "a scheduler runs")
	for _, id := range left.Indexing {
		var h uint64
		_, err := fmt.Sscanf(id, chainID+":index:%d", &h)
		require.NoError(t, err, "a range workflow runs: %s", id)
		require.LessOrEqual(t, h, top, "a workflow for a height that does not exist: %s", id)
	}
}
