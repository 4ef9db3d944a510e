package activity_test

import (
	"context"
	"errors"
	"testing"

	sdkactivity "go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	sdktemporal "go.temporal.io/sdk/temporal"

	"github.com/tideline-dev/tideline/internal/testkit"
	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/indexer/jobs/aggregate"
	"github.com/tideline-dev/tideline/pkg/storage"
)

// newAggregateFixture is the reorg fixture (a fake node, activities on a
// real ClickHouse, reorg check within depth) with aggregator chunks of
// `chunk` heights.
func newAggregateFixture(t *testing.T, depth, chunk int) *reorgFixture {
	t.Helper()
	f := newReorgFixture(t, depth)
	f.agg = newAggregator(f, chunk)
	f.acts.AfterRepair = f.agg.Rewind
	return f
}

// newAggregator is an aggregator over the fixture's database and
// watermark, with chunks of `chunk` heights, as a worker process wires
// it: each call is another process's (exporting to the fixture's series,
// so that the test reads one gauge).
func newAggregator(f *reorgFixture, chunk int) *aggregate.Job {
	st := aggregate.SettingsOf(config.DefaultChain())
	st.StartHeight, st.Chunk = f.acts.Chain.StartHeight, chunk
	m := aggregate.NewMetrics(prometheus.NewRegistry())
	if f.agg != nil {
		m = f.agg.Metrics
	}
	return &aggregate.Job{
		ChainID: f.chainID, Settings: st, Options: f.acts.Chain.Options, Store: f.store.Aggregates(), Progress: f.acts,
		Metrics: m, Log: f.acts.Log,
	}
}

// runAggregate runs job's Aggregate activity once.
func (f *reorgFixture) runAggregate(j *aggregate.Job) (aggregate.Result, error) {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivityWithOptions(j.Aggregate, sdkactivity.RegisterOptions{Name: aggregate.ActivityName})
	v, err := env.ExecuteActivity(aggregate.ActivityName, aggregate.Input{ChainID: f.chainID})
	if err != nil {
		return aggregate.Result{}, err
	}
	var res aggregate.Result
	require.NoError(f.t, v.Get(&res))
	return res, nil
}

func (f *reorgFixture) aggregate() aggregate.Result {
	f.t.Helper()
	res, err := f.aggregateErr()
	require.NoError(f.t, err)
	return res
}

func (f *reorgFixture) aggregateErr() (aggregate.Result, error) { return f.runAggregate(f.agg) }

// write stores the node's blocks of heights in one bulk write, as the
// range path does (no reorg check): the fastest way to a watermark.
func (f *reorgFixture) write(hs ...uint64) {
	f.t.Helper()
	blocks := make([]*chaindata.BlockData, len(hs))
	for i, h := range hs {
		blocks[i] = withFrames(f.node.block(h))
	}
	require.NoError(f.t, f.store.WriteBlocks(context.Background(), f.chainID, blocks))
}

// requireAggregatesAreNode asserts that aggregates rows 0..to are the
// node's cumulative counts, each with the hash of the node's block, and
// that the saved aggregator height is `to`.
func (f *reorgFixture) requireAggregatesAreNode(to uint64) {
	f.t.Helper()
	ctx := context.Background()
	var want []storage.AggregateRow
	sum := storage.AggregateRow{}
	for h := uint64(0); h <= to; h++ {
		b := f.node.block(h)
		sum = sum.Add(storage.BlockCount{Number: h, Hash: b.Block.Hash, Txs: uint64(len(b.Transactions)), Logs: uint64(len(b.Logs)), Bytes: b.Block.Size})
		want = append(want, sum)
	}
	got, err := f.store.Aggregates().AggregateRows(ctx, f.chainID, 0, to)
	require.NoError(f.t, err)
	require.Equal(f.t, want, got)
	h, ok, err := f.store.LoadState(ctx, f.chainID, storage.StateAggregatorHeight)
	require.NoError(f.t, err)
	require.True(f.t, ok)
	require.Equal(f.t, to, h)
	require.Equal(f.t, float64(to), testkit.Value(f.t, f.agg.Metrics.Height.WithLabelValues(f.chainID)))
}

// Behind, the aggregator counts in chunks (one insert each) and stops at
// the watermark, whatever is indexed above it; once the hole is filled it
// goes on from where it stopped.
func TestAggregateCountsInChunksUpToTheWatermark(t *testing.T) {
	f := newAggregateFixture(t, 0, 50)
	f.node.grow('a', 220, func(h uint64) int { return int(h % 4) })
	f.write(append(span(0, 120), span(130, 200)...)...)

	res := f.aggregate()
	require.Equal(t, aggregate.Result{Height: 120, HasHeight: true, Counted: 121, Chunks: 3, Watermark: 120}, res)
	f.requireAggregatesAreNode(120)
	rows, err := f.store.Aggregates().AggregateRows(context.Background(), f.chainID, 121, 300)
	require.NoError(t, err)
	require.Empty(t, rows, "nothing counted above the watermark")

	require.Equal(t, aggregate.Result{Height: 120, HasHeight: true, Watermark: 120}, f.aggregate(), "nothing new: nothing written")

	f.write(span(121, 129)...)
	res = f.aggregate()
	require.Equal(t, aggregate.Result{Height: 200, HasHeight: true, Counted: 80, Chunks: 2, Watermark: 200}, res)
	f.requireAggregatesAreNode(200)

	// At the head: one block, one row.
	f.write(201)
	require.Equal(t, aggregate.Result{Height: 201, HasHeight: true, Counted: 1, Chunks: 1, Watermark: 201}, f.aggregate())
	f.requireAggregatesAreNode(201)
}

// A reorganisation repaired by the indexer (IndexBlock's check near the
// head) lowers the saved aggregator height to its fork point at once; the
// next run counts the new branch from there.
func TestAggregateFollowsTheRepairsRewind(t *testing.T) {
	f := newAggregateFixture(t, 16, 1000)
	f.node.grow('a', 30, func(h uint64) int { return int(h%3) + 1 })
	f.index(span(0, 30)...)
	require.Equal(t, uint64(30), f.aggregate().Height)
	f.requireAggregatesAreNode(30)

	f.node.rollback(25)
	f.node.grow('b', 31, func(h uint64) int { return int(h % 2) })
	res := f.index(31)[0]
	require.NotNil(t, res.Reorg)
	require.Equal(t, uint64(25), res.Reorg.ForkPoint)
	h, _, err := f.store.LoadState(context.Background(), f.chainID, storage.StateAggregatorHeight)
	require.NoError(t, err)
	require.Equal(t, uint64(25), h, "the repair rewound the aggregator to its fork point")
	require.Equal(t, 1.0, testkit.Value(t, f.agg.Metrics.Rewinds.WithLabelValues(f.chainID)))

	agg := f.aggregate()
	require.Equal(t, uint64(31), agg.Height)
	require.Equal(t, uint64(6), agg.Counted, "26..31 counted again")
	require.Zero(t, agg.Rewinds, "the saved height was right already")
	f.requireAggregatesAreNode(31)
}

// A repair the aggregator was not told about (another process, a lost
// signal: here the stored blocks are rewritten directly) is found by its
// own check: its last counted block is no longer the stored one, so it
// walks down to the fork and counts again. A chain that got shorter is
// rewound too, and waits for the height to be written again.
func TestAggregateFindsAReorgByItself(t *testing.T) {
	f := newAggregateFixture(t, 0, 7)
	f.node.grow('a', 150, func(h uint64) int { return int(h % 5) })
	f.write(span(0, 150)...)
	require.Equal(t, uint64(150), f.aggregate().Height)

	f.node.rollback(90) // 60 heights replaced: past the first window of the walk down
	f.node.grow('c', 150, func(uint64) int { return 2 })
	f.write(span(91, 150)...)
	res := f.aggregate()
	require.Equal(t, 1, res.Rewinds)
	require.Equal(t, uint64(90), res.RewoundTo)
	require.Equal(t, uint64(150), res.Height)
	require.Equal(t, uint64(60), res.Counted)
	f.requireAggregatesAreNode(150)
	require.Equal(t, 1.0, testkit.Value(t, f.agg.Metrics.Rewinds.WithLabelValues(f.chainID)))

	// Shorter: 149 and 150 removed (the node lost them), 149 rewritten.
	f.node.rollback(148)
	f.node.grow('d', 149, func(uint64) int { return 1 })
	ctx := context.Background()
	require.NoError(t, f.store.RemoveBlock(ctx, f.chainID, 150))
	f.write(149)
	res = f.aggregate()
	require.Equal(t, uint64(148), res.RewoundTo)
	require.Equal(t, uint64(149), res.Height)
	require.Contains(t, res.Waiting, "height 150 has no canonical block row")
	f.requireAggregatesAreNode(149)
}

// A block that does not link to the block counted below it (a repair
// half-way: the upper height written, the lower not yet) is not counted:
// the aggregator waits below it, and counts once the chain links again.
func TestAggregateWaitsBelowABrokenLink(t *testing.T) {
	f := newAggregateFixture(t, 0, 100)
	f.node.grow('a', 20, func(uint64) int { return 1 })
	f.write(span(0, 20)...)
	require.Equal(t, uint64(20), f.aggregate().Height)

	f.node.rollback(20)
	f.node.grow('a', 23, func(uint64) int { return 1 })
	orphan := fakeBlock('z', 22, "0xnot-block-21", 3)
	require.NoError(t, f.store.WriteBlocks(context.Background(), f.chainID, []*chaindata.BlockData{orphan}))
	f.write(21, 23)
	res := f.aggregate()
	require.Equal(t, uint64(21), res.Height)
	require.Contains(t, res.Waiting, "block 22")
	require.Contains(t, res.Waiting, "does not link to block 21")

	f.write(22)
	res = f.aggregate()
	require.Equal(t, uint64(23), res.Height)
	require.Empty(t, res.Waiting)
	f.requireAggregatesAreNode(23)
}

// Without a saved height (state lost) it resumes from its highest row; a
// run in another process (a restart) resumes from the saved height.
func TestAggregateResumesFromItsLastRow(t *testing.T) {
	f := newAggregateFixture(t, 0, 100)
	f.node.grow('a', 40, func(h uint64) int { return int(h % 3) })
	f.write(span(0, 40)...)
	ctx := context.Background()
	var rows []storage.AggregateRow
	sum := storage.AggregateRow{}
	for h := uint64(0); h <= 30; h++ {
		b := f.node.block(h)
		sum = sum.Add(storage.BlockCount{Number: h, Hash: b.Block.Hash, Txs: uint64(len(b.Transactions)), Logs: uint64(len(b.Logs)), Bytes: b.Block.Size})
		rows = append(rows, sum)
	}
	require.NoError(t, f.store.Aggregates().WriteAggregates(ctx, f.chainID, rows))
	res := f.aggregate()
	require.Equal(t, uint64(10), res.Counted, "31..40 only")
	f.requireAggregatesAreNode(40)

	// A new process: the saved height is where it goes on.
	other := newAggregator(f, 100)
	f.node.grow('a', 45, func(uint64) int { return 1 })
	f.write(span(41, 45)...)
	again, err := f.runAggregate(other)
	require.NoError(t, err)
	require.Equal(t, uint64(5), again.Counted)
	f.requireAggregatesAreNode(45)
}

// Heights the aggregator has not counted but retention removed cannot be
// counted: a non-retryable error naming them, not a silent gap in the
// totals.
func TestAggregateRefusesToCountPrunedHeights(t *testing.T) {
	f := newAggregateFixture(t, 0, 100)
	f.node.grow('a', 30, func(uint64) int { return 1 })
	f.write(span(0, 30)...)
	require.NoError(t, f.store.SaveState(context.Background(), f.chainID, storage.StatePrunedHeight, 10))
	_, err := f.aggregateErr()
	var app *sdktemporal.ApplicationError
	require.True(t, errors.As(err, &app), "%v", err)
	require.Equal(t, aggregate.ErrTypeAggregatesPruned, app.Type())
	require.True(t, app.NonRetryable())
	require.Contains(t, app.Error(), "from height 0")
	require.Contains(t, app.Error(), "up to 10")
}
