package rpc_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/rpc"
)

// stripSelfDestructs makes every SELFDESTRUCT frame of a callTracer answer
// what a 2016-era geth tracer reported: its type alone.
func stripSelfDestructs(r json.RawMessage) json.RawMessage {
	var elems []map[string]any
	_ = json.Unmarshal(r, &elems)
	var walk func(f map[string]any)
	walk = func(f map[string]any) {
		if f["type"] == "SELFDESTRUCT" {
			delete(f, "from")
			delete(f, "to")
			delete(f, "value")
		}
		calls, _ := f["calls"].([]any)
		for _, c := range calls {
			walk(c.(map[string]any))
		}
	}
	for _, el := range elems {
		walk(el["result"].(map[string]any))
	}
	b, _ := json.Marshal(elems)
	return b
}

// An old tracer's SELFDESTRUCT frame without from, to or value is kept
// with what it has (empty parties, no value) and counted by reason; the
// block's other frames are as the node said, so the height is indexed
// instead of refused for ever. A CALL without its caller is still refused
// (TestTraceAnswersAreChecked).
func TestAnOldTracersSelfDestructIsKeptAndCounted(t *testing.T) {
	n := newFixtureNode(t, "anvil", "debug")
	n.edit = func(method string, r json.RawMessage) json.RawMessage {
		if method == "debug_traceBlockByNumber" {
			return stripSelfDestructs(r)
		}
		return r
	}
	reg := prometheus.NewRegistry()
	e, err := rpc.NewEthereum(context.Background(), rpc.EthereumConfig{
		ChainID: "old", EndpointName: "fixture", URL: n.URL, MaxAttempts: 2, BackoffInitial: 1, BackoffMax: 1,
		Traces: rpc.TraceConfig{Mode: rpc.TracesDebug},
	}, nil, rpc.NewMetrics(reg))
	require.NoError(t, err)
	t.Cleanup(e.Close)

	rs := e.FetchBlocks(context.Background(), []uint64{fixtureHeight(n)})
	require.NoError(t, rs[0].Err)
	got := rs[0].Data.Traces
	want := expectedTraces(t, "anvil", "debug")
	require.Len(t, got, len(want))
	destructs := 0
	for i := range want {
		if want[i].Type == chaindata.TraceSelfDestruct {
			destructs++
			want[i].From, want[i].To, want[i].Value = "", "", "0"
		}
		assert.Equal(t, want[i], got[i], "frame %d", i)
	}
	require.Positive(t, destructs, "the fixture has a SELFDESTRUCT frame")

	families, err := reg.Gather()
	require.NoError(t, err)
	counted := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "rpc_answers_incomplete_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			counted[label(m, "reason")] = m.GetCounter().GetValue()
			assert.Equal(t, "old", label(m, "chain_id"))
			assert.Equal(t, "debug_traceBlockByNumber", label(m, "method"))
		}
	}
	assert.Equal(t, map[string]float64{
		rpc.IncompleteSelfDestructFrom: float64(destructs), rpc.IncompleteSelfDestructTo: float64(destructs),
		rpc.IncompleteSelfDestructValue: float64(destructs),
	}, counted)
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
