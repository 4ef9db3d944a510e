package activity_test

import (
	"fmt"
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

// newPushActivities: a fake node with heights 0..head, and the activities
// with a push source for the chain.
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
		Chain:   activity.NewChainSetup(chainID, node, temporal.NewOptions(chainID, ch.Index.ActivityTimeout), ch),
		Store:   store,
		Metrics: metrics.New(prometheus.NewRegistry()),
		Log:     zap.NewNop(),
		Push:    staticPush{latest: 7, healthy: true},
	}
	return acts, node, chainID
}

func pullEnv(acts *activity.Activities) *testsuite.TestActivityEnvironment {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(acts)
	return env
}

func indexHeight(t *testing.T, env *testsuite.TestActivityEnvironment, acts *activity.Activities, in types.IndexBlockInput) types.IndexBlockResult {
	t.Helper()
	v, err := env.ExecuteActivity(acts.IndexBlock, in)
	require.NoError(t, err)
	var res types.IndexBlockResult
	require.NoError(t, v.Get(&res))
	return res
}

func isIndexed(t *testing.T, env *testsuite.TestActivityEnvironment, acts *activity.Activities, in types.IndexBlockInput) bool {
	t.Helper()
	v, err := env.ExecuteLocalActivity(acts.IsIndexed, in)
	require.NoError(t, err)
	var ok bool
	require.NoError(t, v.Get(&ok))
	return ok
}

// Every height is written by the IndexBlock activity, whoever started its
// workflow; the mode that started it labels the write, and a run that
// finds its height indexed is a duplicate of its source: push for a live
// run, pull for the others.
func TestModesLabelWritesAndDuplicates(t *testing.T) {
	acts, node, chainID := newPushActivities(t, 10)
	env := pullEnv(acts)
	m := acts.Metrics
	dup := func(source string) float64 {
		return testkit.Value(t, m.DuplicateDeliveries.WithLabelValues(chainID, source))
	}
	written := func(mode types.IndexMode) float64 {
		return testkit.Value(t, m.HeightsIndexed.WithLabelValues(chainID, mode.Label()))
	}

	live := types.IndexBlockInput{ChainID: chainID, Height: 4, Mode: types.IndexModeLive}
	require.False(t, isIndexed(t, env, acts, live))
	res := indexHeight(t, env, acts, live)
	require.Equal(t, node.block(4).Block.Hash, res.Hash)
	require.Equal(t, 1.0, written(types.IndexModeLive))
	require.Zero(t, written(types.IndexModeDirect))

	// A pull run of the same height ends at its first look: pull's
	// duplicate, nothing fetched.
	fetches := node.count("block")
	require.True(t, isIndexed(t, env, acts, types.IndexBlockInput{ChainID: chainID, Height: 4, Mode: types.IndexModeDirect}))
	require.Equal(t, 1.0, dup(metrics.SourcePull))
	require.Zero(t, dup(metrics.SourcePush))
	require.Equal(t, fetches, node.count("block"))

	// Pull first, then a live run: push's duplicate.
	indexHeight(t, env, acts, types.IndexBlockInput{ChainID: chainID, Height: 5, Mode: types.IndexModeGap})
	require.Equal(t, 1.0, written(types.IndexModeGap))
	require.True(t, isIndexed(t, env, acts, types.IndexBlockInput{ChainID: chainID, Height: 5, Mode: types.IndexModeLive}))
	require.Equal(t, 1.0, dup(metrics.SourcePush))

	// A run recorded before modes travelled with the input.
	indexHeight(t, env, acts, types.IndexBlockInput{ChainID: chainID, Height: 6})
	require.Equal(t, 1.0, testkit.Value(t, m.HeightsIndexed.WithLabelValues(chainID, "unknown")))
	require.Equal(t, 3.0, testkit.Value(t, m.BlocksIndexed.WithLabelValues(chainID)))
}

func TestPushStatus(t *testing.T) {
	acts, _, chainID := newPushActivities(t, 1)
	env := pullEnv(acts)
	status := func(env *testsuite.TestActivityEnvironment, a *activity.Activities) types.PushStatus {
		v, err := env.ExecuteLocalActivity(a.PushStatus, chainID)
		require.NoError(t, err)
		var ps types.PushStatus
		require.NoError(t, v.Get(&ps))
		return ps
	}
	require.Equal(t, types.PushStatus{Enabled: true, Healthy: true, Latest: 7, LagThreshold: 2}, status(env, acts))
	pull := &activity.Activities{Chain: acts.Chain, Store: acts.Store, Metrics: acts.Metrics, Log: acts.Log}
	require.Equal(t, types.PushStatus{}, status(pullEnv(pull), pull), "a chain without push: disabled, no error")
}
