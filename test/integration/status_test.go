package integration

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/tideline-dev/tideline/pkg/localstack"
	"github.com/tideline-dev/tideline/pkg/status"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// `indexer status` on a running catch-up: the head, the watermark, the lag
// and the scheduler's progress (started of total, buckets), as JSON and as
// a table with progress bars.
func TestStatusShowsARunningCatchUp(t *testing.T) {
	const chainID = "it-status"
	node, err := localstack.StartAnvil(filepath.Join(stack.dir, chainID), localstack.AnvilOptions{})
	require.NoError(t, err)
	t.Cleanup(node.Stop)
	const backlog = 1500
	require.NoError(t, nodeClient(t, node.HTTPURL).CallContext(context.Background(), nil, "anvil_mine", hexutil.Uint64(backlog)))

	cfg := chainConfig(chainID, node.HTTPURL)
	ch := cfg.Chains[chainID]
	// A catch-up slow enough to be watched: 1,500 heights at 30 a second.
	ch.HeadScan.CatchupThreshold = 200
	ch.Scheduler.RangeSize, ch.Scheduler.BatchSize, ch.Scheduler.HeightsPerSecond = 0, 10, 30
	cfg.Chains[chainID] = ch
	runWorker(t, cfg)
	tc := temporalClient(t)
	t.Cleanup(func() {
		_ = tc.TerminateWorkflow(context.Background(), temporal.SchedulerID(chainID), "", "test over")
	})
	waitFor(t, time.Minute, "the catch-up running", func() (bool, string) {
		d, err := tc.DescribeWorkflowExecution(context.Background(), temporal.SchedulerID(chainID), "")
		if err != nil {
			return false, err.Error()
		}
		st := d.GetWorkflowExecutionInfo().GetStatus()
		return st == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, st.String()
	})

	bin := buildIndexer(t)
	cfgPath := writeConfig(t, chainID, node.HTTPURL, "", nil)
	run := func(args ...string) []byte {
		out, err := exec.Command(bin, append([]string{"status", "--config", cfgPath, "--log-level", "warn"}, args...)...).Output()
		require.NoError(t, err, "%s", out)
		return out
	}
	var got []status.Report
	// A scheduler starting 30 heights a second on a loaded machine may
	// take more than the default 5 s to answer its query.
	require.NoError(t, json.Unmarshal(run("--json", "--query-timeout", "30s"), &got))
	require.Len(t, got, 1)
	c := got[0]
	require.Equal(t, chainID, c.ChainID)
	require.Empty(t, c.Errors)
	require.GreaterOrEqual(t, c.Head, uint64(backlog))
	// Newest first: the watermark may not exist yet (nothing contiguous
	// from the start height 0), and then every height up to the head is lag.
	if c.Indexed {
		require.Equal(t, c.Head-c.Watermark, c.Lag, "lag is head − watermark")
	} else {
		require.Equal(t, c.Head+1, c.Lag, "lag is every height from 0 to the head")
	}
	require.Positive(t, c.Lag, "still catching up")
	s := c.Scheduler
	require.NotNil(t, s, "the scheduler is reported")
	require.True(t, s.Answered)
	require.GreaterOrEqual(t, s.Total, uint64(backlog-200))
	require.Equal(t, s.Total, s.Scheduled+s.Remaining)
	require.NotEmpty(t, s.Buckets)
	var bucketTotal uint64
	for _, b := range s.Buckets {
		bucketTotal += b.Total
	}
	require.Equal(t, s.Total, bucketTotal, "the buckets add up to the catch-up")

	text := string(run("--query-timeout", "30s"))
	require.Contains(t, text, chainID)
	require.Contains(t, text, "%")
	require.True(t, strings.Contains(text, "█") || strings.Contains(text, "░"), "a progress bar:\n%s", text)
}
