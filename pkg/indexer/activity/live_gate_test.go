package activity

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/indexer/types"
)

func TestLiveGateHoldsRangesWhileALiveHeightWorks(t *testing.T) {
	var g liveGate
	ctx := context.Background()
	waited, err := g.yield(ctx, time.Hour)
	require.NoError(t, err)
	require.False(t, waited, "nothing live: no wait")

	leaveA := g.enter()
	leaveB := g.enter()
	done := make(chan bool)
	go func() {
		w, err := g.yield(ctx, time.Hour)
		require.NoError(t, err)
		done <- w
	}()
	leaveA()
	select {
	case <-done:
		t.Fatal("the range went on while a live height was still at work")
	case <-time.After(50 * time.Millisecond):
	}
	leaveB()
	require.True(t, <-done, "it waited, and went on once the last live height was done")

	// A live height that takes long holds a range for max only.
	leave := g.enter()
	defer leave()
	began := time.Now()
	waited, err = g.yield(ctx, 20*time.Millisecond)
	require.NoError(t, err)
	require.True(t, waited)
	require.GreaterOrEqual(t, time.Since(began), 20*time.Millisecond)

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = g.yield(cctx, time.Hour)
	require.ErrorIs(t, err, context.Canceled)
}

func TestOnlyTheNewestHeightsAreLive(t *testing.T) {
	require.True(t, isLive(types.IndexModeLive))
	require.True(t, isLive(types.IndexModeDirect))
	for _, m := range []types.IndexMode{types.IndexModeScheduler, types.IndexModeGap, types.IndexModeRange, ""} {
		require.False(t, isLive(m), "%q", m)
	}
}
