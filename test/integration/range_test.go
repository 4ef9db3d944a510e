package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/tideline-dev/tideline/pkg/api"
	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/indexer/activity"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/status"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// rangeConfig is catchupConfig with ranges on: range_size heights per
// IndexRange, the newest 64 heights one workflow each, a window of four
// ranges.
func rangeConfig(chainID, url string, rangeSize int) *config.Config {
	cfg := catchupConfig(chainID, url, 1000, 300, 4*rangeSize)
	ch := cfg.Chains[chainID]
	ch.Scheduler.RangeSize = rangeSize
	ch.Scheduler.SingleHeights = 64
	ch.Scheduler.ContinueAsNewAfter = 2000
	ch.Index.RangeConcurrency = 2
	ch.Index.RangeHeartbeat = 10 * time.Second
	ch.Index.RangeTimeout = time.Minute
	cfg.Chains[chainID] = ch
	return cfg
}

// workflowsOf lists a chain's workflows of one type.
func workflowsOf(t *testing.T, tc client.Client, chainID, workflowType string) []recordedRun {
	t.Helper()
	return listRuns(t, tc, fmt.Sprintf("WorkflowType = '%s' AND WorkflowId STARTS_WITH '%s:'", workflowType, chainID))
}

// rangeResult reads a completed IndexRange's result.
func rangeResult(t *testing.T, tc client.Client, r recordedRun) types.IndexRangeWorkflowResult {
	t.Helper()
	var res types.IndexRangeWorkflowResult
	require.NoError(t, tc.GetWorkflow(context.Background(), r.id, r.run).Get(context.Background(), &res))
	return res
}

// A backlog of 2,000 heights on anvil, range_size 500: HeadScan starts the
// scheduler, which starts IndexBlock workflows for the newest 64 heights and
// IndexRange workflows for the rest (never across a bucket: one-minute
// blocks make a day 1,440 heights). Every height lands exactly once, equal
// to the node; every range is one workflow that wrote its heights.
func TestRangeCatchupLandsEveryHeightOnce(t *testing.T) {
	const chainID = "it-range"
	node, head := catchupBacklog(t, chainID, 2000)
	store := openStore(t)
	tc := temporalClient(t)
	cfg := rangeConfig(chainID, node.HTTPURL, 500)
	began := time.Now()
	runWorker(t, cfg)
	deleteSchedulesAtEnd(t, tc, chainID)

	waitCaughtUp(t, store, tc, chainID, head, 3*time.Minute)
	elapsed := time.Since(began)
	requireSameChain(t, rawConn(t), nodeClient(t, node.HTTPURL), chainID, 0, head)
	waitFor(t, time.Minute, "scheduler finished", func() (bool, string) {
		s := schedulerStatus(t, tc, chainID)
		return s == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, s.String()
	})

	// The plan: 64 single heights, then ranges of at most 500 within
	// buckets, covering [0, head-64] exactly once.
	singles := workflowsOf(t, tc, chainID, temporal.IndexBlockWorkflow)
	require.Len(t, singles, 64, "single-height workflows")
	for _, r := range singles {
		var h uint64
		_, err := fmt.Sscanf(strings.TrimPrefix(r.id, chainID+":index:"), "%d", &h)
		require.NoError(t, err)
		require.Greater(t, h, head-64, "single-height workflow %s below the newest 64", r.id)
	}
	ranges := workflowsOf(t, tc, chainID, temporal.IndexRangeWorkflow)
	var covered, written uint64
	var spans []chaindata.HeightRange
	for _, r := range ranges {
		require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, r.status, r.id)
		var from, to uint64
		_, err := fmt.Sscanf(strings.TrimPrefix(r.id, chainID+":range:"), "%d-%d", &from, &to)
		require.NoError(t, err, r.id)
		require.LessOrEqual(t, to-from+1, uint64(500), r.id)
		require.Equal(t, types.LevelForAge(head, to, time.Minute), types.LevelForAge(head, from, time.Minute), "%s crosses a bucket", r.id)
		res := rangeResult(t, tc, r)
		require.Empty(t, res.Failed, r.id)
		covered += to - from + 1
		written += res.Indexed
		spans = append(spans, chaindata.HeightRange{From: from, To: to})
	}
	require.Equal(t, head+1-64, covered, "heights covered by ranges")
	require.Equal(t, covered, written, "heights written by ranges")
	sort.Slice(spans, func(i, j int) bool { return spans[i].From < spans[j].From })
	for i := 1; i < len(spans); i++ {
		require.Greater(t, spans[i].From, spans[i-1].To, "ranges %v and %v overlap", spans[i-1], spans[i])
	}

	p, err := lastSchedulerResult(tc, chainID)
	require.NoError(t, err)
	require.Equal(t, head+1, p.Scheduled)
	t.Logf("range catch-up of %d heights: %s end to end, %.1f heights/s; %d ranges, %d single heights",
		head+1, elapsed.Round(time.Millisecond), float64(head+1)/elapsed.Seconds(), len(ranges), len(singles))
}

// poisonProxy answers eth_getBlockByNumber for one height with a
// malformed block (a hash that is not hex) until healed.
type poisonProxy struct {
	rewritingProxy
	height   uint64
	healed   atomic.Bool
	poisoned atomic.Int64
}

func newPoisonProxy(target string, height uint64) *poisonProxy {
	p := &poisonProxy{height: height}
	p.rewritingProxy = rewritingProxy{target: target, rewrite: p.poison}
	return p
}

func (p *poisonProxy) poison(call rpcMessage, answer *rpcMessage) bool {
	if p.healed.Load() || call.Method != "eth_getBlockByNumber" || len(call.Params) == 0 ||
		call.Params[0] != hexutil.EncodeUint64(p.height) {
		return false
	}
	answer.Result = json.RawMessage(fmt.Sprintf(
		`{"number":"%s","hash":"0xnothex","parentHash":"0x00","timestamp":"0x1","transactions":[]}`,
		hexutil.EncodeUint64(p.height)))
	answer.Error = nil
	p.poisoned.Add(1)
	return true
}

// lastSchedulerResult is the result of the chain's finished scheduler.
func lastSchedulerResult(tc client.Client, chainID string) (types.SchedulerResult, error) {
	var res types.SchedulerResult
	err := tc.GetWorkflow(context.Background(), temporal.SchedulerID(chainID), "").Get(context.Background(), &res)
	return res, err
}

// A range with one poisoned height (the proxy answers malformed for it
// until healed): the rest of the range lands, the range hands the height
// to its own IndexBlock workflow, which fails with MalformedResponse until
// the node heals and then lands it. Nothing is skipped or stored twice.
func TestRangePoisonedHeightGetsItsOwnWorkflow(t *testing.T) {
	const chainID = "it-range-poison"
	const poisoned = 700
	node, head := catchupBacklog(t, chainID, 1000)
	proxy := newPoisonProxy(node.HTTPURL, poisoned)
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	store := openStore(t)
	tc := temporalClient(t)
	runWorker(t, rangeConfig(chainID, srv.URL, 500))
	deleteSchedulesAtEnd(t, tc, chainID)

	// Everything but the poisoned height lands.
	waitFor(t, 3*time.Minute, "all heights but the poisoned one indexed", func() (bool, string) {
		n, err := store.CountIndexed(context.Background(), chainID, []chaindata.HeightRange{{From: 0, To: head}})
		if err != nil {
			return false, err.Error()
		}
		return n[0] == head, fmt.Sprintf("indexed=%d of %d", n[0], head+1)
	})
	missing, err := store.MissingHeights(context.Background(), chainID, 0, head, 10)
	require.NoError(t, err)
	require.Equal(t, []uint64{poisoned}, missing)

	// Its range completed and handed it off.
	var handing recordedRun
	for _, r := range workflowsOf(t, tc, chainID, temporal.IndexRangeWorkflow) {
		var from, to uint64
		_, err := fmt.Sscanf(strings.TrimPrefix(r.id, chainID+":range:"), "%d-%d", &from, &to)
		require.NoError(t, err)
		if from <= poisoned && poisoned <= to {
			handing = r
		}
	}
	require.NotEmpty(t, handing.id, "no range holds the poisoned height")
	waitFor(t, time.Minute, "the poisoned height's range completed", func() (bool, string) {
		d, err := tc.DescribeWorkflowExecution(context.Background(), handing.id, "")
		require.NoError(t, err)
		s := d.GetWorkflowExecutionInfo().GetStatus()
		return s == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, s.String()
	})
	res := rangeResult(t, tc, handing)
	require.Equal(t, []types.FailedHeight{{Height: poisoned, Reason: activity.ErrTypeMalformedResponse}}, res.Failed)
	require.Equal(t, 1, res.HandedOff)

	// Its own workflow runs and fails, typed, until the node heals.
	id := temporal.IndexBlockID(chainID, poisoned)
	waitFor(t, time.Minute, "the poisoned height's workflow retries", func() (bool, string) {
		d, err := tc.DescribeWorkflowExecution(context.Background(), id, "")
		if err != nil {
			return false, err.Error()
		}
		for _, pa := range d.GetPendingActivities() {
			if pa.GetAttempt() >= 2 && pa.GetLastFailure().GetApplicationFailureInfo().GetType() == activity.ErrTypeMalformedResponse {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d pending activities", len(d.GetPendingActivities()))
	})
	require.Positive(t, proxy.poisoned.Load())

	// `indexer status` names it, from Temporal's record of the attempt:
	// the watermark waits below it, the field and endpoint at fault.
	rep := status.Collect(context.Background(), status.Sources{
		Head:      func(context.Context, string) (uint64, error) { return head, nil },
		Watermark: store.Progress.Watermark,
		Temporal:  tc,
	}, []status.Want{{ChainID: chainID}})[0]
	require.Empty(t, rep.Errors)
	require.Equal(t, uint64(poisoned-1), rep.Watermark)
	require.NotNil(t, rep.Held, "status shows the height that holds the watermark")
	require.Equal(t, uint64(poisoned), rep.Held.Height)
	require.GreaterOrEqual(t, rep.Held.Attempt, int32(2))
	f := rep.Held.Failure
	require.Equal(t, temporal.HeightFailure{Stage: "fetch", Type: activity.ErrTypeMalformedResponse, Endpoint: f.Endpoint,
		Method: "eth_getBlockByNumber", Field: "hash", Reason: f.Reason}, f)
	require.NotEmpty(t, f.Endpoint)
	require.NotEmpty(t, f.Reason)
	// The API's status says the same (it said "errors": [] with the
	// watermark standing still).
	cfg := rangeConfig(chainID, srv.URL, 500)
	base := startAPI(t, cfg, store, config.API{})
	resp, err := http.Get(base + "/v1/chains/" + chainID + "/status")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var st api.Status
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
	require.Empty(t, st.Errors)
	require.Equal(t, uint64(poisoned-1), *st.Watermark)
	require.NotNil(t, st.Held, "the API's status shows the height that holds the watermark")
	require.Equal(t, uint64(poisoned), st.Held.Height)
	require.GreaterOrEqual(t, st.Held.Attempt, int32(2))
	require.Equal(t, api.HeldHeight{Height: poisoned, Attempt: st.Held.Attempt, Poisoned: st.Held.Poisoned, Since: st.Held.Since, Stage: "fetch",
		Type: activity.ErrTypeMalformedResponse, Endpoint: f.Endpoint, Method: "eth_getBlockByNumber", Field: "hash",
		Reason: st.Held.Reason, Message: st.Held.Message}, *st.Held)
	require.NotEmpty(t, st.Held.Reason)
	require.NotContains(t, st.Held.Message, srv.URL, "no endpoint URL in an answer")
	proxy.healed.Store(true)
	waitIndexed(t, store, chainID, head, 2*time.Minute)
	requireSameChain(t, rawConn(t), nodeClient(t, node.HTTPURL), chainID, 0, head)
}
