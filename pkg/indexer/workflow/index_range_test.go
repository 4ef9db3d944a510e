package workflow_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// rangeConfig is the defaults with ranges on (range_size 1000, 64 single
// heights, a window of 8000 heights), tweaked.
func rangeConfig(tweak func(*config.Chain)) config.Chain {
	c := config.DefaultChain()
	if tweak != nil {
		tweak(&c)
	}
	return c
}

// An IndexRange runs its activity on the range queue with the range
// timeouts, hands each failed height to its own IndexBlockWorkflow at the
// range's level (the start retried until it succeeds), and wakes the
// chain's scheduler.
func TestIndexRangeHandsOffFailedHeights(t *testing.T) {
	for _, failed := range [][]types.FailedHeight{nil, {{Height: 1500, Reason: "MalformedResponse"}, {Height: 1200, Reason: "StorageError"}}} {
		env := newEnv(newWorkflows(rangeConfig(func(c *config.Chain) {
			c.Index.RangeTimeout = 3 * time.Minute
			c.Index.RangeHeartbeat = 20 * time.Second
		})), time.Now()) // wall time: a local activity retry checks its deadline by the wall clock
		in := types.IndexRangeInput{ChainID: chainID, Range: chaindata.HeightRange{From: 1001, To: 2000}, Level: types.Medium}
		var info activity.Info
		env.OnActivity(acts.IndexRange, mock.Anything, in).Return(
			func(ctx context.Context, _ types.IndexRangeInput) (types.IndexRangeResult, error) {
				info = activity.GetInfo(ctx)
				return types.IndexRangeResult{Indexed: uint64(1000 - len(failed)), Failed: failed}, nil
			}).Once()
		var mu sync.Mutex
		var starts []types.StartIndexInput
		env.OnActivity(acts.StartIndex, mock.Anything, mock.Anything).Return(
			func(_ context.Context, s types.StartIndexInput) (types.StartIndexResult, error) {
				mu.Lock()
				defer mu.Unlock()
				starts = append(starts, s)
				if len(starts) == 1 {
					return types.StartIndexResult{}, errors.New("frontend unavailable")
				}
				return types.StartIndexResult{Started: len(s.Heights)}, nil
			}).Maybe()
		var signalled []chaindata.HeightRange
		env.OnSignalExternalWorkflow(mock.Anything, temporal.SchedulerID(chainID), "", temporal.RangeDoneSignal, mock.Anything).Return(
			func(_, _, _, _ string, arg any) error {
				signalled = append(signalled, arg.(chaindata.HeightRange))
				return errors.New("workflow not found") // no scheduler: ignored
			})
		env.ExecuteWorkflow(temporal.IndexRangeWorkflow, in)
		require.True(t, env.IsWorkflowCompleted())
		require.NoError(t, env.GetWorkflowError())
		var res types.IndexRangeWorkflowResult
		require.NoError(t, env.GetWorkflowResult(&res))

		require.Equal(t, temporal.RangeQueue(chainID), info.TaskQueue)
		require.Equal(t, 20*time.Second, info.HeartbeatTimeout)
		require.Equal(t, []chaindata.HeightRange{in.Range}, signalled)
		require.Equal(t, failed, res.Failed)
		if failed == nil {
			require.Empty(t, starts)
			require.Zero(t, res.HandedOff)
			continue
		}
		require.Equal(t, 2, res.HandedOff)
		require.GreaterOrEqual(t, len(starts), 2, "the failed start is retried")
		for _, s := range starts {
			require.Equal(t, types.StartIndexInput{ChainID: chainID, Heights: []uint64{1500, 1200}, Level: types.Medium, Mode: types.IndexModeRange, SkipIndexed: true}, s)
		}
	}
}

// A failing activity fails the workflow only through Temporal's retries:
// the activity options retry without limit.
func TestRangeActivityRetriesWithoutLimit(t *testing.T) {
	o := temporal.NewOptions(chainID, time.Minute).RangeActivity(5*time.Minute, 30*time.Second)
	require.Equal(t, temporal.RangeQueue(chainID), o.TaskQueue)
	require.Equal(t, 5*time.Minute, o.StartToCloseTimeout)
	require.Equal(t, 30*time.Second, o.HeartbeatTimeout)
	require.Zero(t, o.RetryPolicy.MaximumAttempts, "a range is never given up")
	s := temporal.NewOptions(chainID, time.Minute).IndexRangeStart(1, 1000, types.UltraLow.PriorityKey(), string(types.IndexModeRange))
	require.Equal(t, "test:range:1-1000", s.ID)
	require.Equal(t, "range:test", s.TaskQueue)
	require.Equal(t, 5, s.Priority.PriorityKey)
}
