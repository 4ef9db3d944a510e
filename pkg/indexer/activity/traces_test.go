package activity_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	sdkactivity "go.temporal.io/sdk/activity"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/internal/testkit"
	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/indexer/activity"
	"github.com/tideline-dev/tideline/pkg/indexer/jobs/tracebackfill"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/metrics"
	"github.com/tideline-dev/tideline/pkg/rpc"
	"github.com/tideline-dev/tideline/pkg/simchain"
	"github.com/tideline-dev/tideline/pkg/storage"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// traceFixture is a simulated chain and activities over a real ClickHouse,
// with a client that traces (mode) or not (TracesOff).
type traceFixture struct {
	t       *testing.T
	chainID string
	sim     *simchain.Sim
	store   *storage.ClickHouse
	reg     *prometheus.Registry
}

func newTraceFixture(t *testing.T, length uint64) *traceFixture {
	cfg := simchain.DefaultConfig()
	cfg.Length = length
	cfg.TxsPerBlock = 4
	sim, err := simchain.Start(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = sim.Close() })
	id := fmt.Sprintf("tr%d", time.Now().UnixNano())
	_, store := newActivities(t, id, 0)
	return &traceFixture{t: t, chainID: id, sim: sim, store: store}
}

// activities are the chain's activities with a client of the given mode.
func (f *traceFixture) activities(mode rpc.TraceMode) (*activity.Activities, *testsuite.TestActivityEnvironment) {
	e, err := rpc.NewEthereum(context.Background(), rpc.EthereumConfig{
		ChainID: f.chainID, EndpointName: "sim", URL: f.sim.HTTPURL(), Traces: rpc.TraceConfig{Mode: mode, Batch: 7},
	}, nil, nil)
	require.NoError(f.t, err)
	multi, err := rpc.NewMulti(f.chainID, []rpc.NamedClient{{Name: "sim", Client: e}}, rpc.MultiOptions{}, nil, nil)
	require.NoError(f.t, err)
	f.t.Cleanup(multi.Close)
	ch := config.DefaultChain()
	ch.Index.WriteBatch = 25
	f.reg = prometheus.NewRegistry()
	acts := &activity.Activities{
		Chain:   activity.NewChainSetup(f.chainID, multi, temporal.NewOptions(f.chainID, ch.Index.ActivityTimeout), ch),
		Store:   f.store,
		Metrics: metrics.New(f.reg),
		Log:     zap.NewNop(),
	}
	acts.Chain.Traces = mode != rpc.TracesOff
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(acts)
	return acts, env
}

// backfill is the chain's traces backfill beside acts, as the worker wires
// it: tracing as acts does, with the fixture's backfill settings.
func (f *traceFixture) backfill(acts *activity.Activities) *tracebackfill.Job {
	ch := config.DefaultChain()
	ch.Traces.Backfill.Batch = 30
	ch.Traces.Backfill.HeightsPerSecond = 100_000
	return &tracebackfill.Job{
		ChainID: f.chainID, Settings: tracebackfill.Settings{Traces: acts.Chain.Traces, Backfill: ch.Traces.Backfill},
		Options: acts.Chain.Options, RPC: acts.Chain.RPC, Store: f.store.Traces(), Progress: acts,
		Metrics: tracebackfill.NewMetrics(prometheus.NewRegistry(), acts.Metrics.TracesWritten), Log: zap.NewNop(),
	}
}

func (f *traceFixture) indexRange(env *testsuite.TestActivityEnvironment, acts *activity.Activities, from, to uint64) {
	_, err := env.ExecuteActivity(acts.IndexRange, types.IndexRangeInput{ChainID: f.chainID, Range: chaindata.HeightRange{From: from, To: to}})
	require.NoError(f.t, err)
}

func (f *traceFixture) untraced() []uint64 {
	hs, err := f.store.Traces().UntracedHeights(context.Background(), f.chainID, 0, 1<<40, 10_000)
	require.NoError(f.t, err)
	return hs
}

// checkTraces compares the stored frames of heights with the node's
// tracer's (mode: the tracer they were asked from).
func (f *traceFixture) checkTraces(mode rpc.TraceMode, heights ...uint64) {
	e, err := rpc.NewEthereum(context.Background(), rpc.EthereumConfig{EndpointName: "check", URL: f.sim.HTTPURL(),
		Traces: rpc.TraceConfig{Mode: mode}}, nil, nil)
	require.NoError(f.t, err)
	defer e.Close()
	for _, r := range e.FetchBlocks(context.Background(), heights) {
		require.NoError(f.t, r.Err)
		var stored []chaindata.Trace
		for i := range r.Data.Transactions {
			fs, err := f.store.Reader().Traces().TxTraces(context.Background(), f.chainID, storage.Position{Block: r.Height, Index: uint32(i)})
			require.NoError(f.t, err)
			stored = append(stored, fs...)
		}
		require.Equal(f.t, r.Data.Traces, stored, "height %d", r.Height)
	}
}

// With tracing on, a height is written only with its traces: a client
// that does not trace fails the fetch; one that does writes them, with
// the mark saying so.
func TestIndexingWithTracesWritesThemOrNothing(t *testing.T) {
	f := newTraceFixture(t, 60)
	acts, env := f.activities(rpc.TracesOff)
	acts.Chain.Traces = true // the chain traces, its client does not
	_, err := env.ExecuteActivity(acts.IndexBlock, types.IndexBlockInput{ChainID: f.chainID, Height: 5})
	require.Error(t, err)
	require.Contains(t, err.Error(), "without its traces")
	indexed, err := f.store.IsIndexed(context.Background(), f.chainID, 5)
	require.NoError(t, err)
	require.False(t, indexed, "not marked")

	acts, env = f.activities(rpc.TracesDebug)
	_, err = env.ExecuteActivity(acts.IndexBlock, types.IndexBlockInput{ChainID: f.chainID, Height: 5})
	require.NoError(t, err)
	f.indexRange(env, acts, 10, 40)
	require.Empty(t, f.untraced())
	f.checkTraces(rpc.TracesDebug, 5, 10, 23, 40)
	assert.Positive(t, testkit.Sum(t, f.reg, "indexer_traces_written_total", map[string]string{"chain_id": f.chainID}))
}

// A chain indexed without traces gets them from the backfill, newest
// first, without its blocks being written again; a height whose trace
// cannot be had is asked again by the next pass.
func TestBackfillFillsTheTracesOfIndexedHeights(t *testing.T) {
	f := newTraceFixture(t, 200)
	plain, plainEnv := f.activities(rpc.TracesOff)
	f.indexRange(plainEnv, plain, 0, 150)
	require.Len(t, f.untraced(), 151)
	blockRows := func() uint64 {
		return testkit.NewestVersion(t, clickhouse.Addr, testkit.Database(t, "a_"), "blocks", f.chainID, 1<<40)
	}
	before := blockRows()

	acts, env := f.activities(rpc.TracesParity)
	ctx := context.Background()
	backfill := f.backfill(acts)
	require.NoError(t, backfill.Prepare(ctx))
	f.sim.Poison(17, 90)
	run := func() tracebackfill.Result {
		var suite testsuite.WorkflowTestSuite
		env := suite.NewTestActivityEnvironment()
		env.RegisterActivityWithOptions(backfill.BackfillTraces, sdkactivity.RegisterOptions{Name: tracebackfill.ActivityName})
		v, err := env.ExecuteActivity(tracebackfill.ActivityName, tracebackfill.Input{ChainID: f.chainID})
		require.NoError(t, err)
		var res tracebackfill.Result
		require.NoError(t, v.Get(&res))
		return res
	}
	res := run()
	assert.Equal(t, uint64(149), res.Traced)
	assert.Equal(t, uint64(2), res.Failed)
	assert.False(t, res.Running)
	assert.Equal(t, uint64(17), res.Done, "the next pass starts at the lowest height that failed")
	assert.Equal(t, []uint64{90, 17}, f.untraced())
	f.checkTraces(rpc.TracesParity, 0, 16, 18, 89, 91, 150)
	assert.Equal(t, before, blockRows(), "no block written again")

	f.sim.Heal(17, 90)
	res = run()
	assert.Equal(t, uint64(2), res.Traced)
	assert.Equal(t, uint64(151), res.Done)
	assert.Empty(t, f.untraced())
	f.checkTraces(rpc.TracesParity, 17, 90)

	// Heights indexed since, with tracing on, leave nothing to do.
	f.indexRange(env, acts, 151, 180)
	res = run()
	assert.Zero(t, res.Traced)
	assert.Equal(t, uint64(181), res.Done)
	assert.Equal(t, "every indexed height is traced", run().Skipped)
	st, err := f.store.Traces().TraceBackfillState(ctx, f.chainID)
	require.NoError(t, err)
	assert.True(t, st.Enabled)

	// Tracing off, then on again: the next backfill looks at every height.
	plain.Chain.Traces = false
	require.NoError(t, f.backfill(plain).Prepare(ctx))
	f.indexRange(plainEnv, plain, 181, 190)
	require.NoError(t, backfill.Prepare(ctx))
	res = run()
	assert.Equal(t, uint64(10), res.Traced)
	assert.Equal(t, uint64(0), res.Floor)
	assert.Empty(t, f.untraced())
}

// withFrames is a copy of a block of the fake node with a trace: per
// transaction its call and one inner call, so that every traces table has
// rows.
func withFrames(b *chaindata.BlockData) *chaindata.BlockData {
	c := *b
	d := &c
	d.Traced, d.Traces = true, nil
	for _, tx := range d.Transactions {
		top := chaindata.Trace{BlockNumber: d.Block.Number, BlockHash: d.Block.Hash, TxIndex: tx.Index, TxHash: tx.Hash,
			Type: chaindata.TraceCall, From: tx.From, To: tx.To, Value: "0", Input: "0x", Output: "0x", Subtraces: 1}
		inner := top
		inner.Index, inner.Address, inner.Subtraces = 1, []uint32{0}, 0
		inner.From, inner.To, inner.Value = tx.To, tx.From, "1"
		d.Traces = append(d.Traces, top, inner)
	}
	return d
}
