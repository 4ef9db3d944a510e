package activity_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/internal/testkit"
	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/indexer/activity"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/metrics"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// staticPush is a push source frozen at one status.
type staticPush struct {
	latest  uint64
	healthy bool
}

func (p staticPush) Status() (uint64, bool) { return p.latest, p.healthy }

// newPushActivities: a fake node with heights 0..head, the activities with
// a push source for the chain, and an activity environment for pull.
func newPushActivities(t *testing.T, head uint64) (*activity.Activities, *fakeChain, string) {
	t.Helper()
	chainID := fmt.Sprintf("push%d", time.Now().UnixNano())
	_, store := newActivities(t, chainID, 0)
	node := &fakeChain{calls: map[string]int{}}
	node.grow('a', head, func(h uint64) int { return int(h % 3) })
	ch := config.DefaultChain()
	ch.ConfirmationDepth = 0
	ch.Push = config.Push{Endpoint: "ws", LagThreshold: 2}
	acts := &activity.Activities{
		Chains:  map[string]activity.Chain{chainID: activity.NewChain(node, temporal.NewOptions(chainID, ch.Index.ActivityTimeout), ch)},
		Store:   store,
		Metrics: metrics.New(prometheus.NewRegistry()),
		Log:     zap.NewNop(),
		Push:    map[string]activity.PushSource{chainID: staticPush{latest: 7, healthy: true}},
	}
	return acts, node, chainID
}

func pullEnv(acts *activity.Activities) *testsuite.TestActivityEnvironment {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(acts)
	return env
}

func pullIndex(t *testing.T, env *testsuite.TestActivityEnvironment, acts *activity.Activities, chainID string, h uint64) types.IndexBlockResult {
	t.Helper()
	v, err := env.ExecuteActivity(acts.IndexBlock, types.IndexBlockInput{ChainID: chainID, Height: h})
	require.NoError(t, err)
	var res types.IndexBlockResult
	require.NoError(t, v.Get(&res))
	return res
}

// Push and pull share one path; the later delivery of a height is a
// duplicate of its source, counted and dropped, nothing written twice.
func TestPushAndPullDeliverOnce(t *testing.T) {
	acts, node, chainID := newPushActivities(t, 10)
	env := pullEnv(acts)
	ctx := context.Background()
	m := acts.Metrics
	dup := func(source string) float64 {
		return testkit.Value(t, m.DuplicateDeliveries.WithLabelValues(chainID, source))
	}

	// Push first: written and counted as push's.
	res, err := activity.IndexPushed(ctx, acts, chainID, 4)
	require.NoError(t, err)
	require.False(t, res.AlreadyIndexed)
	require.Equal(t, node.block(4).Block.Hash, res.Hash)
	require.Equal(t, 1.0, testkit.Value(t, m.PushBlocksIndexed.WithLabelValues(chainID)))
	require.Equal(t, 1.0, testkit.Value(t, m.BlocksIndexed.WithLabelValues(chainID)))

	// Push again: found indexed before fetching.
	fetches := node.count("block")
	res, err = activity.IndexPushed(ctx, acts, chainID, 4)
	require.NoError(t, err)
	require.True(t, res.AlreadyIndexed)
	require.Equal(t, fetches, node.count("block"), "push looks before it fetches")
	require.Equal(t, 1.0, dup(metrics.SourcePush))

	// Pull's workflow asks IsIndexed first: a pull duplicate.
	v, err := env.ExecuteActivity(acts.IsIndexed, types.IndexBlockInput{ChainID: chainID, Height: 4})
	require.NoError(t, err)
	var indexed bool
	require.NoError(t, v.Get(&indexed))
	require.True(t, indexed)
	require.Equal(t, 1.0, dup(metrics.SourcePull))

	// Pull that got past IsIndexed before push wrote: it looks again right
	// before writing, and drops the height.
	require.True(t, pullIndex(t, env, acts, chainID, 4).AlreadyIndexed)
	require.Equal(t, 2.0, dup(metrics.SourcePull))
	require.Equal(t, 1.0, testkit.Value(t, m.BlocksIndexed.WithLabelValues(chainID)), "nothing written twice")

	// Pull first, then push: push's duplicate.
	require.False(t, pullIndex(t, env, acts, chainID, 5).AlreadyIndexed)
	res, err = activity.IndexPushed(ctx, acts, chainID, 5)
	require.NoError(t, err)
	require.True(t, res.AlreadyIndexed)
	require.Equal(t, 2.0, dup(metrics.SourcePush))
	require.Equal(t, 1.0, testkit.Value(t, m.PushBlocksIndexed.WithLabelValues(chainID)))
	require.Equal(t, 2.0, testkit.Value(t, m.BlocksIndexed.WithLabelValues(chainID)))

	// A height the node lacks: push fails, typed as a fetch failure.
	_, err = activity.IndexPushed(ctx, acts, chainID, 99)
	require.ErrorContains(t, err, "push: fetch")
	require.Equal(t, 1.0, testkit.Value(t, m.IndexErrors.WithLabelValues(chainID, "fetch")))
}

// Both sources deliver the same heights at the same time in one process
// (push from the top, pull from the bottom, so that they cross): each
// height is written exactly once, every other delivery is a duplicate of
// one source or the other.
func TestPushAndPullRaceWritesOnce(t *testing.T) {
	const n = 30
	acts, _, chainID := newPushActivities(t, n-1)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	wg.Go(func() {
		for i := range uint64(n) {
			if _, err := activity.IndexPushed(ctx, acts, chainID, n-1-i); err != nil {
				errs <- err
			}
		}
	})
	wg.Go(func() {
		env := pullEnv(acts)
		for h := range uint64(n) {
			if _, err := env.ExecuteActivity(acts.IndexBlock, types.IndexBlockInput{ChainID: chainID, Height: h}); err != nil {
				errs <- err
			}
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	m := acts.Metrics
	written := testkit.Value(t, m.BlocksIndexed.WithLabelValues(chainID))
	dups := testkit.Value(t, m.DuplicateDeliveries.WithLabelValues(chainID, metrics.SourcePush)) +
		testkit.Value(t, m.DuplicateDeliveries.WithLabelValues(chainID, metrics.SourcePull))
	require.Equal(t, float64(n), written, "each height written once")
	require.Equal(t, float64(n), dups, "the other delivery of each height is a duplicate")
	missing, err := acts.Store.MissingHeights(ctx, chainID, 0, n-1, n)
	require.NoError(t, err)
	require.Empty(t, missing)
	t.Logf("push wrote %v, pull wrote %v", testkit.Value(t, m.PushBlocksIndexed.WithLabelValues(chainID)),
		written-testkit.Value(t, m.PushBlocksIndexed.WithLabelValues(chainID)))
}

func TestPushStatus(t *testing.T) {
	acts, _, chainID := newPushActivities(t, 1)
	env := pullEnv(acts)
	status := func(id string) types.PushStatus {
		v, err := env.ExecuteLocalActivity(acts.PushStatus, id)
		require.NoError(t, err)
		var ps types.PushStatus
		require.NoError(t, v.Get(&ps))
		return ps
	}
	require.Equal(t, types.PushStatus{Enabled: true, Healthy: true, Latest: 7, LagThreshold: 2}, status(chainID))
	require.Equal(t, types.PushStatus{}, status("no-push-here"), "a chain without push: disabled, no error")
}
