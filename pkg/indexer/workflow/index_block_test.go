package workflow_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

func TestIndexBlock(t *testing.T) {
	for _, indexed := range []bool{false, true} {
		env := newEnv(newWorkflows(chainConfig(nil)), t0)
		in := types.IndexBlockInput{ChainID: chainID, Height: 42}
		env.OnActivity(acts.IsIndexed, mock.Anything, in).Return(indexed, nil).Once()
		writes := 0
		env.OnActivity(acts.IndexBlock, mock.Anything, in).Return(
			func(_ context.Context, in types.IndexBlockInput) (types.IndexBlockResult, error) {
				writes++
				return types.IndexBlockResult{Hash: "0xabc", TxCount: 3, LogCount: 7}, nil
			}).Maybe()
		env.ExecuteWorkflow(temporal.IndexBlockWorkflow, in)
		require.True(t, env.IsWorkflowCompleted())
		require.NoError(t, env.GetWorkflowError())
		var res types.IndexBlockResult
		require.NoError(t, env.GetWorkflowResult(&res))
		if indexed {
			require.Equal(t, types.IndexBlockResult{AlreadyIndexed: true}, res)
			require.Zero(t, writes, "an indexed height is not fetched again")
		} else {
			require.Equal(t, types.IndexBlockResult{Hash: "0xabc", TxCount: 3, LogCount: 7}, res)
			require.Equal(t, 1, writes)
		}
		env.AssertExpectations(t)
	}
}

// A check that keeps failing (the database down for longer than the local
// activity's retries) does not fail the run: the height is indexed by the
// activity, whose retries have no end, so no height is left to no one.
func TestIndexBlockIndexesWhenItsCheckFails(t *testing.T) {
	env := newEnv(newWorkflows(chainConfig(nil)), t0)
	in := types.IndexBlockInput{ChainID: chainID, Height: 43}
	env.OnActivity(acts.IsIndexed, mock.Anything, in).Return(false, errors.New("dial tcp 127.0.0.1:9000: connect: connection refused"))
	env.OnActivity(acts.IndexBlock, mock.Anything, in).Return(types.IndexBlockResult{Hash: "0xdef", TxCount: 1}, nil).Once()
	env.ExecuteWorkflow(temporal.IndexBlockWorkflow, in)
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var res types.IndexBlockResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, types.IndexBlockResult{Hash: "0xdef", TxCount: 1}, res)
	env.AssertExpectations(t)
}
