package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/tideline-dev/tideline/pkg/localstack"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// prunedProxy answers, while pruning, every request for a block at or
// below `below` with the error a node that pruned its history gives, as a
// non-archive endpoint does for old heights.
type prunedProxy struct {
	rewritingProxy
	below   uint64
	pruning atomic.Bool
}

func newPrunedProxy(target string, below uint64) *prunedProxy {
	p := &prunedProxy{below: below}
	p.pruning.Store(true)
	p.rewritingProxy = rewritingProxy{target: target, rewrite: p.prune}
	return p
}

func (p *prunedProxy) prune(call rpcMessage, answer *rpcMessage) bool {
	if !p.pruning.Load() || call.Method != "eth_getBlockByNumber" || len(call.Params) == 0 {
		return false
	}
	s, _ := call.Params[0].(string)
	h, err := hexutil.DecodeUint64(s)
	if err != nil || h > p.below {
		return false
	}
	answer.Result = nil
	answer.Error = json.RawMessage(`{"code":-32000,"message":"historical state is not available"}`)
	return true
}

// A scheduler whose heights the endpoint cannot serve (a pruned node, for
// heights it was given to catch up) is stuck: its window fills with
// heights that fail for ever and its progress stands still. `indexer
// scheduler reset` stops it: the dry run lists, --yes terminates the
// scheduler and its window's workflows, and nothing stored is touched.
// Once the endpoint serves the heights again, the next scans catch the
// chain up to the node.
func TestSchedulerResetFreesAChain(t *testing.T) {
	// Serial: under the parallel tests' load a workflow of the window
	// started a moment before the reset was still running after it (height
	// 6 in one clean-clone CI run), so the reset's check races the load.
	const chainID = "it-reset"
	node, err := localstack.StartAnvil(filepath.Join(stack.dir, chainID), localstack.AnvilOptions{BlockTime: time.Second})
	require.NoError(t, err)
	t.Cleanup(node.Stop)
	const pruned = 12
	waitFor(t, time.Minute, "a backlog on the node", func() (bool, string) {
		h := nodeHead(t, node.HTTPURL)
		return h > pruned+2, fmt.Sprintf("head %d", h)
	})
	proxy := newPrunedProxy(node.HTTPURL, pruned)
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	cfg := chainConfig(chainID, srv.URL)
	ch := cfg.Chains[chainID]
	// A scheduler for any backlog of 10, with a small window: the test is
	// about a stuck one.
	ch.HeadScan.CatchupThreshold = 10
	ch.Scheduler.BatchSize, ch.Scheduler.MaxInFlight = 5, 10
	cfg.Chains[chainID] = ch
	runWorker(t, cfg)
	store := openStore(t)
	ctx := context.Background()
	tc := temporalClient(t)

	// Full means: the next batch does not fit (the scheduler starts whole
	// batches), so with more than max_in_flight − batch_size heights that
	// never finish, it starts nothing more. How many that is depends on
	// the head when it started (the servable heights above `pruned` leave
	// the window).
	var stuck temporal.SchedulerProgress
	full := uint64(ch.Scheduler.MaxInFlight - ch.Scheduler.BatchSize)
	waitFor(t, 2*time.Minute, "a scheduler with a full window of heights the node cannot serve", func() (bool, string) {
		v, err := tc.QueryWorkflow(ctx, temporal.SchedulerID(chainID), "", temporal.SchedulerProgressQuery)
		if err != nil {
			return false, err.Error()
		}
		require.NoError(t, v.Get(&stuck))
		return stuck.InFlight > full && stuck.Remaining > 0, fmt.Sprintf("in flight %d, scheduled %d, remaining %d", stuck.InFlight, stuck.Scheduled, stuck.Remaining)
	})
	desc, err := tc.DescribeWorkflowExecution(ctx, temporal.SchedulerID(chainID), "")
	require.NoError(t, err)
	runID := desc.GetWorkflowExecutionInfo().GetExecution().GetRunId()
	before, err := store.StoredBlocks(ctx, chainID, 0, 1<<62)
	require.NoError(t, err)

	bin := buildIndexer(t)
	cfgPath := writeConfig(t, chainID, srv.URL, "", nil)
	reset := func(args ...string) string {
		out, err := exec.Command(bin, append([]string{"scheduler", "reset", chainID, "--config", cfgPath, "--log-level", "warn"}, args...)...).CombinedOutput()
		require.NoError(t, err, "%s", out)
		return string(out)
	}
	out := reset()
	require.Contains(t, out, "would stop the scheduler "+temporal.SchedulerID(chainID))
	requireRunStatus(t, temporal.SchedulerID(chainID), runID, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING)

	out = reset("--yes")
	require.Contains(t, out, "stopped the scheduler "+temporal.SchedulerID(chainID))
	requireRunStatus(t, temporal.SchedulerID(chainID), runID, enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED)
	// Its window went with it: no workflow of a pruned height runs.
	for h := uint64(0); h <= pruned; h++ {
		d, err := tc.DescribeWorkflowExecution(ctx, fmt.Sprintf("%s:index:%d", chainID, h), "")
		if err == nil {
			require.NotEqual(t, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, d.GetWorkflowExecutionInfo().GetStatus(), "height %d", h)
		}
	}
	after, err := store.StoredBlocks(ctx, chainID, 0, 1<<62)
	require.NoError(t, err)
	require.Subset(t, after, before, "nothing stored was touched")

	// The endpoint serves old heights again: the scans catch up.
	proxy.pruning.Store(false)
	head := nodeHead(t, node.HTTPURL)
	waitIndexed(t, store, chainID, head, 2*time.Minute)
	requireSameChain(t, rawConn(t), nodeClient(t, node.HTTPURL), chainID, 0, head)
}

func requireRunStatus(t *testing.T, id, runID string, want enumspb.WorkflowExecutionStatus) {
	t.Helper()
	d, err := temporalClient(t).DescribeWorkflowExecution(context.Background(), id, runID)
	require.NoError(t, err)
	got := d.GetWorkflowExecutionInfo().GetStatus()
	require.Equal(t, want, got, "%s (run %s) is %s", id, runID, strings.ToLower(got.String()))
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
