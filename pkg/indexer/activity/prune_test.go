package activity_test

import (
	"context"
	"testing"
	"time"

	sdkactivity "go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/internal/testkit"
	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/indexer/jobs/retention"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/storage"
)

// newPruneFixture is the aggregate fixture with retention set, heights
// 0..300 written and counted, and the look-up tables filled.
func newPruneFixture(t *testing.T, r config.Retention, margin uint64) *reorgFixture {
	t.Helper()
	f := newAggregateFixture(t, 0, 1000)
	st := retention.SettingsOf(config.DefaultChain())
	st.StartHeight, st.Retention, st.Margin = f.acts.Chain.StartHeight, r, margin
	f.ret = &retention.Job{
		ChainID: f.chainID, Settings: st, Options: f.acts.Chain.Options, Store: f.store.Retention(), Progress: f.acts,
		Metrics: retention.NewMetrics(prometheus.NewRegistry()), Log: f.acts.Log,
	}
	f.node.grow('a', 300, func(h uint64) int { return int(h%3) + 1 })
	return f
}

func (f *reorgFixture) prune() retention.Result {
	f.t.Helper()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivityWithOptions(f.ret.Prune, sdkactivity.RegisterOptions{Name: retention.ActivityName})
	v, err := env.ExecuteActivity(retention.ActivityName, retention.Input{ChainID: f.chainID})
	require.NoError(f.t, err)
	var res retention.Result
	require.NoError(f.t, v.Get(&res))
	return res
}

func (f *reorgFixture) waitMutations() {
	f.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		n, err := f.store.Records().PendingMutations(context.Background())
		require.NoError(f.t, err)
		if n == 0 {
			return
		}
		require.True(f.t, time.Now().Before(deadline), "%d mutations still running", n)
		time.Sleep(100 * time.Millisecond)
	}
}

func (f *reorgFixture) rowsAtOrBelow(h uint64) map[string]uint64 {
	f.t.Helper()
	n, err := f.store.Retention().RowsAtOrBelow(context.Background(), f.chainID, h)
	require.NoError(f.t, err)
	return n
}

// Retention prunes only what every limit allows: nothing before the
// aggregator has counted; then up to watermark − keep_heights, with the
// pruned height saved first; every detail and look-up row at or below it
// goes, the rows above, the marks and the aggregates stay; the watermark
// now starts above the pruned height; a run with nothing new deletes
// nothing.
func TestPruneKeepsTheNewestHeights(t *testing.T) {
	f := newPruneFixture(t, config.Retention{KeepHeights: 100, Interval: time.Hour}, 20)
	f.write(span(0, 300)...)

	res := f.prune()
	require.False(t, res.HasPruned)
	require.Contains(t, res.Skipped, "the aggregator has counted nothing yet")
	for table, n := range f.rowsAtOrBelow(300) {
		require.Positive(t, n, "%s: the test proves nothing without rows", table)
	}

	require.Equal(t, uint64(300), f.aggregate().Height)
	res = f.prune()
	require.True(t, res.Raised)
	require.Equal(t, uint64(200), res.Target, "watermark 300 − keep_heights 100")
	require.Equal(t, uint64(200), res.PrunedHeight)
	require.Len(t, res.Mutated, len(storage.PruneTables), "one mutation per table: partition 0 holds heights above 200")
	require.Empty(t, res.Dropped)
	f.waitMutations()
	for table, n := range f.rowsAtOrBelow(200) {
		require.Zero(t, n, "rows at or below the pruned height left in %s", table)
	}
	stored, err := f.store.StoredBlocks(context.Background(), f.chainID, 0, 300)
	require.NoError(t, err)
	require.Len(t, stored, 100, "201..300 stay")
	require.Equal(t, uint64(201), stored[0].Number)
	rows, err := f.store.Aggregates().AggregateRows(context.Background(), f.chainID, 0, 300)
	require.NoError(t, err)
	require.Len(t, rows, 301, "aggregates stay")
	ok, err := f.store.IsIndexed(context.Background(), f.chainID, 5)
	require.NoError(t, err)
	require.True(t, ok, "the marks stay: a pruned height is never indexed again")
	require.Equal(t, 200.0, testkit.Value(t, f.ret.Metrics.PrunedHeight.WithLabelValues(f.chainID)))
	require.Equal(t, 1.0, testkit.Value(t, f.ret.Metrics.Deletions.WithLabelValues(f.chainID, "blocks", "mutation")))

	v, err := f.env.ExecuteActivity(f.acts.Watermark, f.chainID)
	require.NoError(t, err)
	var wm types.WatermarkResult
	require.NoError(t, v.Get(&wm))
	require.Equal(t, types.WatermarkResult{Height: 300, Found: true, Floor: 201}, wm)

	res = f.prune()
	require.False(t, res.Raised)
	require.Empty(t, res.Mutated)
	require.Equal(t, "nothing left at or below the pruned height", res.Skipped)

	// A late write of a pruned height (a retried or duplicate write) is
	// deleted by the next run.
	f.write(150)
	require.Equal(t, uint64(1), f.rowsAtOrBelow(200)["blocks"])
	res = f.prune()
	require.Subset(t, res.Mutated, []string{"blocks", "transactions", "logs"})
	f.waitMutations()
	for table, n := range f.rowsAtOrBelow(200) {
		require.Zero(t, n, "the late write's rows left in %s", table)
	}
}

// The other limits: the retention margin below the watermark and the
// aggregator's height cap the target whatever keep_heights says, and
// keep_days keeps the blocks younger than the cutoff.
func TestPruneTargetIsTheLowestLimit(t *testing.T) {
	t.Run("margin", func(t *testing.T) {
		f := newPruneFixture(t, config.Retention{KeepHeights: 10, Interval: time.Hour}, 50)
		f.write(span(0, 300)...)
		f.aggregate()
		res := f.prune()
		require.Equal(t, uint64(250), res.PrunedHeight, "watermark 300 − margin 50")
	})
	t.Run("aggregator", func(t *testing.T) {
		f := newPruneFixture(t, config.Retention{KeepHeights: 10, Interval: time.Hour}, 5)
		f.write(span(0, 120)...)
		f.aggregate()
		f.write(span(121, 300)...)
		res := f.prune()
		require.Equal(t, uint64(120), res.PrunedHeight, "only counted heights are pruned")
	})
	t.Run("days", func(t *testing.T) {
		f := newPruneFixture(t, config.Retention{KeepDays: 5, Interval: time.Hour}, 5)
		// One block an hour, 300 the newest (half an hour ahead): 5 days
		// keep 180 (119.5 hours old) and above.
		now := time.Now().Unix()
		f.node.mu.Lock()
		for h, b := range f.node.blocks {
			b.Block.Timestamp = uint64(now - int64(300-h)*3600 + 1800)
		}
		f.node.mu.Unlock()
		f.write(span(0, 300)...)
		f.aggregate()
		res := f.prune()
		require.Equal(t, uint64(179), res.PrunedHeight, "179 is 120.5 hours old, 180 119.5")
	})
	t.Run("off", func(t *testing.T) {
		f := newPruneFixture(t, config.Retention{}, 5)
		f.write(span(0, 300)...)
		f.aggregate()
		res := f.prune()
		require.False(t, res.HasPruned)
		require.Equal(t, "retention is off for this chain", res.Skipped)
	})
}
