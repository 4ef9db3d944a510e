package temporal_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	sdktemporal "go.temporal.io/sdk/temporal"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// attrs reads the search attributes of a start, by name.
func attrs(t *testing.T, sa sdktemporal.SearchAttributes) map[string]any {
	t.Helper()
	out := map[string]any{}
	for k, v := range sa.GetUntypedValues() {
		out[k.GetName()] = v
	}
	return out
}

func TestIndexBlockStart(t *testing.T) {
	o := temporal.NewOptions("eth", time.Minute)
	for key := 1; key <= 5; key++ {
		so := o.IndexBlockStart(42, key, "gap")
		require.Equal(t, "eth:index:42", so.ID)
		require.Equal(t, "index:eth", so.TaskQueue)
		require.Equal(t, key, so.Priority.PriorityKey, "the key is passed through as given")
		// A second start while a run exists is refused and reported, so
		// that the caller can count it; a finished height may run again.
		require.Equal(t, enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL, so.WorkflowIDConflictPolicy)
		require.True(t, so.WorkflowExecutionErrorWhenAlreadyStarted)
		require.Equal(t, enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE, so.WorkflowIDReusePolicy)
		require.Equal(t, map[string]any{
			temporal.AttrChainID: "eth", temporal.AttrIndexMode: "gap",
			temporal.AttrHeightFrom: int64(42), temporal.AttrHeightTo: int64(42), temporal.AttrPriority: int64(key),
		}, attrs(t, so.TypedSearchAttributes))
		require.Equal(t, map[string]any{temporal.SummaryMemo: so.StaticSummary}, so.Memo)
	}
	require.Equal(t, "height 42 of chain eth, gap, priority 1", o.IndexBlockStart(42, 1, "gap").StaticSummary)
}

// The push source's start: only the height's first run.
func TestIndexBlockFirstStart(t *testing.T) {
	so := temporal.NewOptions("eth", time.Minute).IndexBlockFirstStart(7, 1, "live")
	require.Equal(t, "eth:index:7", so.ID)
	require.Equal(t, enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL, so.WorkflowIDConflictPolicy)
	require.Equal(t, enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE, so.WorkflowIDReusePolicy)
	require.True(t, so.WorkflowExecutionErrorWhenAlreadyStarted)
	require.Equal(t, "live", attrs(t, so.TypedSearchAttributes)[temporal.AttrIndexMode])
	require.Equal(t, "height 7 of chain eth, live, priority 1", so.StaticSummary)
}

// A namespace without the search attributes refuses starts that set them:
// the worker turns them off, and memo and summary remain.
func TestStartsWithoutSearchAttributes(t *testing.T) {
	o := temporal.NewOptions("eth", time.Minute)
	o.SearchAttributes = false
	for _, so := range []struct {
		sa   sdktemporal.SearchAttributes
		memo map[string]any
	}{
		{o.IndexBlockStart(1, 1, "direct").TypedSearchAttributes, o.IndexBlockStart(1, 1, "direct").Memo},
		{o.IndexRangeStart(1, 9, 3, "range").TypedSearchAttributes, o.IndexRangeStart(1, 9, 3, "range").Memo},
		{o.SchedulerStart(chaindata.HeightRange{From: 1, To: 9}, "scheduler").TypedSearchAttributes, o.SchedulerStart(chaindata.HeightRange{From: 1, To: 9}, "scheduler").Memo},
		{o.HeadScanSchedule(time.Second, "direct", nil).SearchAttributes, o.HeadScanSchedule(time.Second, "direct", nil).Memo},
	} {
		require.Zero(t, so.sa.Size())
		require.NotEmpty(t, so.memo[temporal.SummaryMemo])
	}
}

func TestIndexRangeStart(t *testing.T) {
	so := temporal.NewOptions("eth", time.Minute).IndexRangeStart(1000, 1999, 4, "range")
	require.Equal(t, "eth:range:1000-1999", so.ID)
	require.Equal(t, "range:eth", so.TaskQueue)
	require.Equal(t, 4, so.Priority.PriorityKey)
	require.Equal(t, map[string]any{
		temporal.AttrChainID: "eth", temporal.AttrIndexMode: "range",
		temporal.AttrHeightFrom: int64(1000), temporal.AttrHeightTo: int64(1999), temporal.AttrPriority: int64(4),
	}, attrs(t, so.TypedSearchAttributes))
	require.Equal(t, "heights 1000-1999 of chain eth, range, priority 4", so.StaticSummary)
}

func TestSchedulerStartRefusesSecond(t *testing.T) {
	so := temporal.NewOptions("eth", time.Minute).SchedulerStart(chaindata.HeightRange{From: 3, To: 9}, "scheduler")
	require.Equal(t, "eth:scheduler", so.ID)
	require.Equal(t, map[string]any{
		temporal.SchedulerOwnedMemo: chaindata.HeightRange{From: 3, To: 9},
		temporal.SummaryMemo:        "catch-up of heights 3-9 of chain eth",
	}, so.Memo)
	require.Equal(t, "admin:eth", so.TaskQueue)
	require.Equal(t, enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL, so.WorkflowIDConflictPolicy)
	require.True(t, so.WorkflowExecutionErrorWhenAlreadyStarted)
	require.Equal(t, map[string]any{
		temporal.AttrChainID: "eth", temporal.AttrIndexMode: "scheduler",
		temporal.AttrHeightFrom: int64(3), temporal.AttrHeightTo: int64(9),
	}, attrs(t, so.TypedSearchAttributes), "no Priority: the scheduler runs at the default")
}

func TestScanSchedules(t *testing.T) {
	o := temporal.NewOptions("eth", time.Minute)
	h := o.HeadScanSchedule(10*time.Second, "direct", "in")
	require.Equal(t, "eth:headscan", h.ScheduleID)
	require.Equal(t, temporal.HeadScanWorkflow, h.Workflow)
	require.Equal(t, "admin:eth", h.TaskQueue)
	require.Equal(t, []any{"in"}, h.Args)
	require.Equal(t, o.ScanTimeout(), h.Timeout)
	require.Equal(t, map[string]any{temporal.AttrChainID: "eth", temporal.AttrIndexMode: "direct"}, attrs(t, h.SearchAttributes))
	require.Equal(t, "head scan of chain eth, every 10s", h.Summary)
	g := o.GapScanSchedule(time.Minute, "gap", "in")
	require.Equal(t, "eth:gapscan", g.ScheduleID)
	require.Equal(t, temporal.GapScanWorkflow, g.Workflow)
	require.Equal(t, map[string]any{temporal.AttrChainID: "eth", temporal.AttrIndexMode: "gap"}, attrs(t, g.SearchAttributes))

	// The side jobs' Schedules: their packages' tests (pkg/indexer/jobs).
	require.Equal(t, []string{"eth:headscan", "eth:gapscan", "eth:aggregate", "eth:prune", "eth:token-metadata", "eth:traces-backfill", "eth:stream"}, temporal.ScheduleIDs("eth"))
}

// The dev server's --search-attribute values, and the registration's
// types, name the same five attributes.
func TestSearchAttributeSpecs(t *testing.T) {
	require.Equal(t, []string{"ChainID=Keyword", "HeightFrom=Int", "HeightTo=Int", "IndexMode=Keyword", "Priority=Int"},
		temporal.SearchAttributeSpecs())
	require.Len(t, temporal.SearchAttributeTypes(), 5)
}

func TestLocalActivityOptionsMatchSeed(t *testing.T) {
	lo := temporal.NewOptions("eth", time.Minute).LocalActivity()
	require.Equal(t, "20s", lo.ScheduleToCloseTimeout.String())
	require.Equal(t, int32(5), lo.RetryPolicy.MaximumAttempts)
	require.Equal(t, "500ms", lo.RetryPolicy.InitialInterval.String())
	require.Equal(t, "5s", lo.RetryPolicy.MaximumInterval.String())
}

// The live path's workflow tasks are retried soon when their worker is
// gone: a height's run and each HeadScan run.
func TestLiveWorkflowTasksTimeOutSoon(t *testing.T) {
	o := temporal.NewOptions("eth", time.Minute)
	require.Equal(t, temporal.ShortTaskTimeout, o.IndexBlockStart(7, 1, "live").WorkflowTaskTimeout)
	require.Equal(t, temporal.ShortTaskTimeout, o.HeadScanSchedule(time.Second, "direct", nil).TaskTimeout)
	require.Equal(t, temporal.ShortTaskTimeout, o.SchedulerStart(chaindata.HeightRange{From: 1, To: 9}, "scheduler").WorkflowTaskTimeout, "its progress query waits less")
	require.Less(t, temporal.ShortTaskTimeout, 10*time.Second, "below the server's default")
}

func TestIndexActivityTakesTheTimeoutGiven(t *testing.T) {
	ao := temporal.NewOptions("eth", 90*time.Second).IndexActivity()
	require.Equal(t, 90*time.Second, ao.StartToCloseTimeout)
	require.Equal(t, "index:eth", ao.TaskQueue)
	require.Zero(t, ao.RetryPolicy.MaximumAttempts, "a height is never given up")
}

// A chain's retry.* settings reach the activity options of each kind;
// unset ones keep the defaults.
func TestChainOptionsTakeTheConfiguredRetryPolicies(t *testing.T) {
	ch := config.DefaultChain()
	ch.Retry.Range = config.RetryPolicy{InitialInterval: 3 * time.Second, BackoffCoefficient: 1.5, MaximumInterval: 2 * time.Minute}
	ch.Retry.Admin.MaximumAttempts = 9
	o := temporal.ChainOptions("eth", ch)
	ro := o.RangeActivity(time.Minute, time.Second)
	require.Equal(t, 3*time.Second, ro.RetryPolicy.InitialInterval)
	require.Equal(t, 1.5, ro.RetryPolicy.BackoffCoefficient)
	require.Equal(t, 2*time.Minute, ro.RetryPolicy.MaximumInterval)
	require.Zero(t, ro.RetryPolicy.MaximumAttempts)
	require.Equal(t, int32(9), o.AdminActivity().RetryPolicy.MaximumAttempts)
	require.Equal(t, int32(5), o.LocalActivity().RetryPolicy.MaximumAttempts, "the default")
	require.Equal(t, ch.Index.ActivityTimeout, o.IndexActivity().StartToCloseTimeout)
	require.Equal(t, ch.Index.HeartbeatTimeout, o.IndexActivity().HeartbeatTimeout, "an attempt no worker runs is retried within seconds")
	require.Positive(t, o.IndexActivity().HeartbeatTimeout)
}
