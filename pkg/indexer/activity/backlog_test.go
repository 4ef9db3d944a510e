package activity

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/indexer/types"
)

// Backlog heights take turns, index.backlog_concurrency at once; live
// heights (push's, HeadScan's, and runs from before modes) never wait;
// a waiter whose context ends gets an error saying what it waited for;
// a released turn goes to the next waiter; 0 means no bound.
func TestBacklogTurns(t *testing.T) {
	ctx := context.Background()
	a := &Activities{Chain: ChainSetup{BacklogConcurrency: 1}}
	first, err := a.backlogTurn(ctx, types.IndexModeScheduler)
	require.NoError(t, err)

	for _, m := range []types.IndexMode{types.IndexModeLive, types.IndexModeDirect, ""} {
		release, err := a.backlogTurn(ctx, m)
		require.NoError(t, err, "mode %q waited", m)
		release()
	}

	ended, cancel := context.WithCancel(ctx)
	cancel()
	_, err = a.backlogTurn(ended, types.IndexModeGap)
	require.ErrorIs(t, err, context.Canceled, "no turn is free: the waiter's end is its error")
	require.ErrorContains(t, err, "index.backlog_concurrency 1")

	got := make(chan error, 1)
	go func() {
		release, err := a.backlogTurn(ctx, types.IndexModeRange)
		if err == nil {
			release()
		}
		got <- err
	}()
	first()
	require.NoError(t, <-got, "the released turn goes to the waiter")

	unbounded := &Activities{}
	for range 3 {
		_, err := unbounded.backlogTurn(ended, types.IndexModeScheduler)
		require.NoError(t, err, "0: no bound, never waits")
	}
}
