package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.uber.org/zap"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/loadgen"
	"github.com/tideline-dev/tideline/pkg/localstack"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// listed is one workflow run as the visibility API lists it, with
// tideline's search attributes decoded.
type listed struct {
	WorkflowID, RunID, Type string
	Status                  enumspb.WorkflowExecutionStatus
	Start                   time.Time
	ChainID, Mode           string
	From, To, Priority      int64
	Summary                 string
}

func decodeListed(t *testing.T, e *workflowpb.WorkflowExecutionInfo) listed {
	t.Helper()
	l := listed{
		WorkflowID: e.GetExecution().GetWorkflowId(), RunID: e.GetExecution().GetRunId(),
		Type: e.GetType().GetName(), Status: e.GetStatus(), Start: e.GetStartTime().AsTime(),
	}
	dc := converter.GetDefaultDataConverter()
	fields := e.GetSearchAttributes().GetIndexedFields()
	decode := func(name string, out any) {
		if p := fields[name]; p != nil {
			require.NoError(t, dc.FromPayload(p, out), "search attribute %s of %s", name, l.WorkflowID)
		}
	}
	decode(temporal.AttrChainID, &l.ChainID)
	decode(temporal.AttrIndexMode, &l.Mode)
	decode(temporal.AttrHeightFrom, &l.From)
	decode(temporal.AttrHeightTo, &l.To)
	decode(temporal.AttrPriority, &l.Priority)
	if p := e.GetMemo().GetFields()[temporal.SummaryMemo]; p != nil {
		require.NoError(t, dc.FromPayload(p, &l.Summary))
	}
	return l
}

// listWorkflows runs a visibility query, every page, as an operator's
// `temporal workflow list --query` does.
func listWorkflows(t *testing.T, query string) []listed {
	t.Helper()
	tc := temporalClient(t)
	var out []listed
	var token []byte
	for {
		resp, err := tc.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: "default", Query: query, NextPageToken: token,
		})
		require.NoError(t, err, "query %q", query)
		for _, e := range resp.GetExecutions() {
			out = append(out, decodeListed(t, e))
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			return out
		}
	}
}

// indexRuns waits until visibility lists an IndexBlock run for every
// height from..to of the chain, checks that each run carries its search
// attributes and summary, and returns the runs by height.
func indexRuns(t *testing.T, chainID string, from, to uint64) map[uint64][]listed {
	t.Helper()
	query := fmt.Sprintf("WorkflowType = 'IndexBlock' AND ChainID = '%s' AND HeightFrom >= %d AND HeightTo <= %d", chainID, from, to)
	var byHeight map[uint64][]listed
	waitFor(t, 30*time.Second, fmt.Sprintf("IndexBlock runs of %s %d..%d listed", chainID, from, to), func() (bool, string) {
		byHeight = map[uint64][]listed{}
		for _, r := range listWorkflows(t, query) {
			byHeight[uint64(r.From)] = append(byHeight[uint64(r.From)], r)
		}
		return uint64(len(byHeight)) == to-from+1, fmt.Sprintf("%d of %d heights listed", len(byHeight), to-from+1)
	})
	for h, runs := range byHeight {
		for _, r := range runs {
			require.Equal(t, r.From, r.To, "an IndexBlock's HeightFrom and HeightTo are its height: %+v", r)
			require.Equal(t, temporal.IndexBlockID(chainID, h), r.WorkflowID)
			require.Equal(t, chainID, r.ChainID)
			require.NotEmpty(t, r.Mode, "%s has no IndexMode", r.WorkflowID)
			require.Positive(t, r.Priority, "%s has no Priority", r.WorkflowID)
			require.Equal(t, fmt.Sprintf("height %d of chain %s, %s, priority %d", h, chainID, r.Mode, r.Priority), r.Summary)
		}
	}
	return byHeight
}

// liveRun returns the height's run push started, and the number of its
// other runs. Push starts a height once (reuse policy reject duplicate),
// so there is at most one live run; another run can only be pull's that
// began just as the live run finished, and it must have ended at its
// first look, completed.
func liveRun(t *testing.T, runs []listed) (live *listed, others int) {
	t.Helper()
	for i, r := range runs {
		if r.Mode != string(types.IndexModeLive) {
			require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, r.Status, "%+v", r)
			others++
			continue
		}
		require.Nil(t, live, "two live runs of one height: %+v and %+v", live, r)
		live = &runs[i]
	}
	return live, others
}

// The visibility queries docs/operations.md gives operators, as templates:
// the test fills them in with its chain and heights, the docs with
// `mainnet`, 19000000 and a shell date.
const (
	queryFailedAbove     = "ChainID = '%s' AND HeightTo >= %d AND ExecutionStatus IN ('Failed', 'Terminated', 'TimedOut', 'Canceled')"
	querySchedulerRuns   = "WorkflowType = 'Scheduler' AND ChainID = '%s' AND ExecutionStatus = 'Running'"
	querySchedulerWork   = "ChainID = '%s' AND IndexMode IN ('scheduler', 'range') AND ExecutionStatus = 'Running'"
	queryRetrying        = "WorkflowType = 'IndexBlock' AND ChainID = '%s' AND ExecutionStatus = 'Running' AND StartTime < '%s'"
	docsChain            = "mainnet"
	docsHeight           = 19000000
	docsRetryingSince    = "$(date -u -d '-2 min' +%FT%TZ)"
	operationsPath       = "../../docs/operations.md"
	failedHeightResponse = `{"code":-32000,"message":"test: this height is unavailable"}`
)

// The docs give exactly the queries tested below.
func TestOperatorQueriesAreDocumented(t *testing.T) {
	t.Parallel() // see README.md, "Serial and parallel tests"
	raw, err := os.ReadFile(operationsPath)
	require.NoError(t, err)
	doc := string(raw)
	for _, q := range []string{
		fmt.Sprintf(queryFailedAbove, docsChain, docsHeight),
		fmt.Sprintf(querySchedulerRuns, docsChain),
		fmt.Sprintf(querySchedulerWork, docsChain),
		fmt.Sprintf(queryRetrying, docsChain, docsRetryingSince),
	} {
		require.Contains(t, doc, q, "%s lacks the query", operationsPath)
	}
}

// The operator's questions, asked of the dev server's visibility API on a
// real run (a 1,200-height catch-up, paced to last a while, then a live
// chain, one of whose heights the node refuses to serve):
//   - is a scheduler running, and how far is it: one running Scheduler
//     with its range, and the work it has in flight, inside that range;
//   - what is retrying right now: the IndexBlock of the refused height,
//     and nothing else, once it has run longer than heights take;
//   - what failed for the chain above height H: that height's run, once
//     an operator terminated it, and nothing above it.
func TestOperatorQueries(t *testing.T) {
	const chainID = "it-queries"
	const backlog = 1200
	node, err := localstack.StartAnvil(filepath.Join(stack.dir, chainID), localstack.AnvilOptions{BlockTime: time.Second})
	require.NoError(t, err)
	t.Cleanup(node.Stop)
	gen, err := loadgen.New(context.Background(), node.HTTPURL, zap.NewNop(), loadgen.Config{PrivateKey: localstack.AnvilDefaultKey})
	require.NoError(t, err)
	require.NoError(t, gen.MineEmpty(context.Background(), backlog))
	gen.Close()
	bad := nodeHead(t, node.HTTPURL) + 8 // a live height, mined a few seconds from now
	var failing atomic.Bool
	failing.Store(true)
	proxy := httptest.NewServer(&rewritingProxy{target: node.HTTPURL, rewrite: func(call rpcMessage, answer *rpcMessage) bool {
		if !failing.Load() || call.Method != "eth_getBlockByNumber" || len(call.Params) < 1 || call.Params[0] != fmt.Sprintf("0x%x", bad) {
			return false
		}
		answer.Result, answer.Error = nil, json.RawMessage(failedHeightResponse)
		return true
	}})
	t.Cleanup(proxy.Close)

	cfg := chainConfig(chainID, proxy.URL)
	// No push: its websocket endpoint would also serve as a failover for
	// the refused height.
	ch := cfg.Chains[chainID]
	ch.Scheduler.RangeSize = 1000
	ch.Scheduler.HeightsPerSecond = 100 // the catch-up lasts over ten seconds
	cfg.Chains[chainID] = ch
	store := openStore(t)
	runWorker(t, cfg)
	tc := temporalClient(t)

	// Is a scheduler running, and how far is it?
	var sched []listed
	waitFor(t, time.Minute, "a running scheduler listed", func() (bool, string) {
		sched = listWorkflows(t, fmt.Sprintf(querySchedulerRuns, chainID))
		return len(sched) == 1, fmt.Sprintf("%d listed", len(sched))
	})
	s := sched[0]
	require.Equal(t, temporal.SchedulerID(chainID), s.WorkflowID)
	require.Equal(t, string(types.IndexModeScheduler), s.Mode)
	require.Zero(t, s.From)
	require.GreaterOrEqual(t, s.To, int64(backlog))
	require.Equal(t, fmt.Sprintf("catch-up of heights 0-%d of chain %s", s.To, chainID), s.Summary)
	var sawRange bool
	lowest := s.To + 1
	waitFor(t, time.Minute, "the scheduler's work in flight, a range among it", func() (bool, string) {
		work := listWorkflows(t, fmt.Sprintf(querySchedulerWork, chainID))
		for _, w := range work {
			require.Contains(t, []string{string(types.IndexModeScheduler), string(types.IndexModeRange)}, w.Mode)
			require.GreaterOrEqual(t, w.From, s.From, "%+v outside the scheduler's range", w)
			require.LessOrEqual(t, w.To, s.To, "%+v outside the scheduler's range", w)
			lowest = min(lowest, w.From)
			if w.Type == "IndexRange" {
				sawRange = true
			}
		}
		return sawRange, fmt.Sprintf("%d in flight, lowest height %d", len(work), lowest)
	})
	p, err := tc.QueryWorkflow(context.Background(), s.WorkflowID, "", temporal.SchedulerProgressQuery)
	require.NoError(t, err)
	var progress temporal.SchedulerProgress
	require.NoError(t, p.Get(&progress))
	require.Equal(t, chaindata.HeightRange{From: uint64(s.From), To: uint64(s.To)}, progress.Owned, "the search attributes say what the progress query says")
	t.Logf("scheduler %d..%d: lowest height in flight %d; progress: %d scheduled, %d remaining", s.From, s.To, lowest,
		progress.Scheduled, progress.Remaining)
	waitFor(t, 2*time.Minute, "the scheduler finished", func() (bool, string) {
		n := len(listWorkflows(t, fmt.Sprintf(querySchedulerRuns, chainID)))
		return n == 0, fmt.Sprintf("%d running", n)
	})

	// What is retrying right now? Heights take well under a second; one
	// running for more than 10 s is retrying (or waits for a slot).
	var retrying []listed
	waitFor(t, time.Minute, fmt.Sprintf("height %d retrying", bad), func() (bool, string) {
		retrying = listWorkflows(t, fmt.Sprintf(queryRetrying, chainID, time.Now().Add(-10*time.Second).UTC().Format(time.RFC3339)))
		return len(retrying) > 0, "none yet"
	})
	require.Len(t, retrying, 1, "only the refused height retries: %+v", retrying)
	require.Equal(t, temporal.IndexBlockID(chainID, bad), retrying[0].WorkflowID)
	require.Equal(t, int64(bad), retrying[0].From)
	d, err := tc.DescribeWorkflowExecution(context.Background(), retrying[0].WorkflowID, retrying[0].RunID)
	require.NoError(t, err)
	require.Len(t, d.GetPendingActivities(), 1)
	pending := d.GetPendingActivities()[0]
	require.Greater(t, pending.GetAttempt(), int32(1), "the describe call shows the attempts")
	require.Contains(t, pending.GetLastFailure().GetMessage(), "this height is unavailable")

	// What failed above height H? An operator gave up on the height.
	require.NoError(t, tc.TerminateWorkflow(context.Background(), retrying[0].WorkflowID, retrying[0].RunID, "operator: test"))
	var failed []listed
	waitFor(t, 30*time.Second, "the terminated run listed", func() (bool, string) {
		failed = listWorkflows(t, fmt.Sprintf(queryFailedAbove, chainID, bad))
		return len(failed) > 0, "none yet"
	})
	require.Len(t, failed, 1, "%+v", failed)
	require.Equal(t, retrying[0].RunID, failed[0].RunID)
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED, failed[0].Status)
	require.Empty(t, listWorkflows(t, fmt.Sprintf(queryFailedAbove, chainID, bad+1)), "nothing failed above it")

	// The node serves the height again: pull starts it anew and the chain
	// is complete.
	failing.Store(false)
	head := nodeHead(t, node.HTTPURL)
	waitIndexed(t, store, chainID, head, 2*time.Minute)
	requireSameChain(t, rawConn(t), nodeClient(t, node.HTTPURL), chainID, 0, head)
}

// The worker registers the search attributes a namespace lacks (a server
// started without them), again without harm, and a namespace where they
// cannot be registered, or one holds another type, is an error naming them.
func TestEnsureSearchAttributes(t *testing.T) {
	t.Parallel() // see README.md, "Serial and parallel tests"
	srv, err := localstack.StartTemporal(t.TempDir(), localstack.TemporalOptions{NoUI: true})
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := client.DialContext(ctx, client.Options{HostPort: srv.HostPort, Namespace: "default"})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	registered := func(ns string) map[string]enumspb.IndexedValueType {
		r, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: ns})
		require.NoError(t, err)
		return r.GetCustomAttributes()
	}
	require.NotContains(t, registered("default"), temporal.AttrChainID)

	require.NoError(t, temporal.EnsureSearchAttributes(ctx, c, "default"))
	for name, typ := range temporal.SearchAttributeTypes() {
		require.Equal(t, typ, registered("default")[name], name)
	}
	require.NoError(t, temporal.EnsureSearchAttributes(ctx, c, "default"), "a second call changes nothing")
	// A start carrying them is accepted at once.
	_, err = c.ExecuteWorkflow(ctx, temporal.NewOptions("sa", time.Minute).IndexBlockStart(1, 1, string(types.IndexModeDirect)),
		temporal.IndexBlockWorkflow, types.IndexBlockInput{ChainID: "sa", Height: 1})
	require.NoError(t, err)

	var missing *temporal.MissingSearchAttributeError
	err = temporal.EnsureSearchAttributes(ctx, c, "no-such-namespace")
	require.ErrorAs(t, err, &missing)
	require.Equal(t, temporal.SearchAttributeSpecs(), missing.Missing)

	_, err = c.WorkflowService().RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
		Namespace: "clash", WorkflowExecutionRetentionPeriod: durationpb.New(24 * time.Hour),
	})
	require.NoError(t, err)
	waitFor(t, 30*time.Second, "namespace clash usable", func() (bool, string) {
		_, err := c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
			Namespace: "clash", SearchAttributes: map[string]enumspb.IndexedValueType{temporal.AttrIndexMode: enumspb.INDEXED_VALUE_TYPE_INT},
		})
		return err == nil, fmt.Sprint(err)
	})
	err = temporal.EnsureSearchAttributes(ctx, c, "clash")
	require.ErrorAs(t, err, &missing)
	require.Equal(t, []string{"IndexMode=Keyword"}, missing.Missing)
}
