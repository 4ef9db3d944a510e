package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"

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

// requireOneRunPerHeight waits until visibility lists an IndexBlock run
// for every height from..to of the chain, and checks that each height has
// exactly one, carrying its search attributes and summary. It returns
// them by height.
func requireOneRunPerHeight(t *testing.T, chainID string, from, to uint64) map[uint64]listed {
	t.Helper()
	query := fmt.Sprintf("WorkflowType = 'IndexBlock' AND ChainID = '%s' AND HeightFrom >= %d AND HeightTo <= %d", chainID, from, to)
	var runs []listed
	waitFor(t, 30*time.Second, fmt.Sprintf("IndexBlock runs of %s %d..%d listed", chainID, from, to), func() (bool, string) {
		runs = listWorkflows(t, query)
		return uint64(len(runs)) >= to-from+1, fmt.Sprintf("%d runs listed", len(runs))
	})
	byHeight := map[uint64]listed{}
	for _, r := range runs {
		h := uint64(r.From)
		other, twice := byHeight[h]
		require.False(t, twice, "height %d has two IndexBlock runs: %+v and %+v", h, other, r)
		require.Equal(t, r.From, r.To, "an IndexBlock's HeightFrom and HeightTo are its height: %+v", r)
		require.Equal(t, temporal.IndexBlockID(chainID, h), r.WorkflowID)
		require.Equal(t, chainID, r.ChainID)
		require.NotEmpty(t, r.Mode, "%s has no IndexMode", r.WorkflowID)
		require.Positive(t, r.Priority, "%s has no Priority", r.WorkflowID)
		require.Equal(t, fmt.Sprintf("height %d of chain %s, %s, priority %d", h, chainID, r.Mode, r.Priority), r.Summary)
		byHeight[h] = r
	}
	require.Len(t, byHeight, int(to-from+1))
	return byHeight
}
