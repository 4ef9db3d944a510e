package activity_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	sdktemporal "go.temporal.io/sdk/temporal"

	"github.com/tideline-dev/tideline/internal/testkit"
	"github.com/tideline-dev/tideline/pkg/indexer/activity"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
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
