package activity_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// startRecorder is a Temporal client that records the workflows it is asked
// to start; any other call panics on the nil embedded client.
type startRecorder struct {
	client.Client
	started []types.SchedulerInput
}

func (r *startRecorder) ExecuteWorkflow(_ context.Context, _ client.StartWorkflowOptions, _ interface{}, args ...interface{}) (client.WorkflowRun, error) {
	r.started = append(r.started, args[0].(types.SchedulerInput))
	return nil, nil
}

// A scan reads the watermark before it asks whether a scheduler runs; a
// scheduler that finished in between indexed what the scan saw missing.
// StartScheduler reads the watermark again and starts only what is left.
func TestStartSchedulerStartsOnlyWhatTheWatermarkHasNotPassed(t *testing.T) {
	const chain = "ss"
	acts, store := newActivities(t, chain, 0)
	rec := &startRecorder{}
	acts.Temporal = rec
	acts.Chain.Options = temporal.NewOptions(chain, time.Minute)
	ctx := context.Background()
	asked := types.SchedulerInput{ChainID: chain, Head: 9, Remaining: []chaindata.HeightRange{{From: 0, To: 9}}}

	// 0..5 indexed since the scan: the scheduler owns 6..9 only.
	writeHeights(t, store, chain, 0, 1, 2, 3, 4, 5, 8)
	res, err := acts.StartScheduler(ctx, asked)
	require.NoError(t, err)
	require.Equal(t, types.StartSchedulerResult{Started: true}, res)
	require.Len(t, rec.started, 1)
	require.Equal(t, []chaindata.HeightRange{{From: 6, To: 9}}, rec.started[0].Remaining)

	// All of it indexed: nothing starts.
	writeHeights(t, store, chain, 6, 7, 9)
	res, err = acts.StartScheduler(ctx, asked)
	require.NoError(t, err)
	require.Equal(t, types.StartSchedulerResult{CaughtUp: true}, res)
	require.Len(t, rec.started, 1, "a caught-up backlog starts no scheduler")
}
