package activity_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdkactivity "go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/tideline-dev/tideline/internal/testkit"
	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/indexer/activity"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/indexer/workflow"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// A height above the node's head (started from a phantom head) ends
// cleanly, unindexed and counted, instead of failing for ever; a height
// missing at or below a head this process confirmed is a node fault and
// fails (Temporal retries it).
func TestIndexBlockAboveTheHeadEndsCleanly(t *testing.T) {
	f := newReorgFixture(t, 0)
	f.node.grow('a', 10, func(uint64) int { return 1 })
	notProduced := func() float64 {
		return testkit.Value(t, f.acts.Metrics.NotProduced.WithLabelValues(f.chainID))
	}

	res := f.index(15)[0]
	require.True(t, res.NotProduced)
	require.Equal(t, 1.0, notProduced())

	// The scans confirm head 10; then the node falls back to 8 (a lagging
	// replica): 9 and 10 exist, so they are retried, not dropped.
	v, err := f.env.ExecuteActivity(f.acts.HeadHeight, f.chainID)
	require.NoError(t, err)
	var head uint64
	require.NoError(t, v.Get(&head))
	require.Equal(t, uint64(10), head)
	f.node.rollback(8)
	_, err = f.env.ExecuteActivity(f.acts.IndexBlock, types.IndexBlockInput{ChainID: f.chainID, Height: 9})
	var app *sdktemporal.ApplicationError
	require.True(t, errors.As(err, &app), "%v", err)
	require.Equal(t, activity.ErrTypeBlockNotFound, app.Type())
	require.True(t, f.index(11)[0].NotProduced, "above both the node's head and the confirmed one")
	require.Equal(t, 2.0, notProduced())

	for _, h := range []uint64{9, 11, 15} {
		ok, err := f.store.IsIndexed(t.Context(), f.chainID, h)
		require.NoError(t, err)
		require.False(t, ok, "height %d", h)
	}
}

// A height below an indexed one exists, whatever a lagging node says of
// its head: it is retried, not ended.
func TestIndexBlockBelowAnIndexedHeightIsRetried(t *testing.T) {
	f := newReorgFixture(t, 0)
	f.node.grow('a', 10, func(uint64) int { return 1 })
	require.False(t, f.index(10)[0].NotProduced)
	f.node.rollback(7) // the node now answers head 7 and no block 8..10
	_, err := f.env.ExecuteActivity(f.acts.IndexBlock, types.IndexBlockInput{ChainID: f.chainID, Height: 9})
	var app *sdktemporal.ApplicationError
	require.True(t, errors.As(err, &app), "%v", err)
	require.Equal(t, activity.ErrTypeBlockNotFound, app.Type())
	require.Zero(t, testkit.Value(t, f.acts.Metrics.NotProduced.WithLabelValues(f.chainID)))
	require.True(t, f.index(11)[0].NotProduced, "above everything indexed and every head")
}

// answerLost is the real store whose first WriteBlocks writes everything,
// mark included, and then fails, as an attempt whose worker stops (or
// whose deadline passes) between the write and its reply.
type answerLost struct {
	activity.Store
	writes atomic.Int32
}

func (s *answerLost) WriteBlocks(ctx context.Context, chainID string, blocks []*chaindata.BlockData) error {
	if err := s.Store.WriteBlocks(ctx, chainID, blocks); err != nil {
		return err
	}
	if s.writes.Add(1) == 1 {
		return context.DeadlineExceeded
	}
	return nil
}

// A retried IndexBlock whose earlier attempt wrote the height and lost its
// answer ends as already indexed: the height is written once (the
// production workflow, its retry policy, the real store).
func TestIndexBlockRetryAfterALostAnswerWritesNothing(t *testing.T) {
	f := newReorgFixture(t, 0)
	f.node.grow('a', 3, func(uint64) int { return 2 })
	store := &answerLost{Store: f.store}
	f.acts.Store = store
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterActivity(f.acts)
	w := &workflow.Workflows{Chain: workflow.ChainSetup{Options: temporal.NewOptions(f.chainID, time.Minute)}}
	env.RegisterWorkflow(w.IndexBlock)
	attempts := 0
	env.SetOnActivityStartedListener(func(info *sdkactivity.Info, _ context.Context, _ converter.EncodedValues) {
		if info.ActivityType.Name == "IndexBlock" {
			attempts++
		}
	})

	env.ExecuteWorkflow(w.IndexBlock, types.IndexBlockInput{ChainID: f.chainID, Height: 3})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var res types.IndexBlockResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, 2, attempts, "the write's attempt and its retry")
	require.True(t, res.AlreadyIndexed)
	require.Equal(t, int32(1), store.writes.Load(), "written once")
	ok, err := f.store.IsIndexed(t.Context(), f.chainID, 3)
	require.NoError(t, err)
	require.True(t, ok)
}
