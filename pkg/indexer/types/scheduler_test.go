package types_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// The scheduler's input is what ContinueAsNew carries; it must survive the
// JSON data converter unchanged.
func TestSchedulerInputRoundTrip(t *testing.T) {
	in := types.SchedulerInput{
		ChainID:   "test",
		Head:      700_000,
		Remaining: []chaindata.HeightRange{{From: 0, To: 687_040}},
		State: types.SchedulerState{
			Runs: 3, Scheduled: 12_960,
			Buckets: []temporal.BucketProgress{{Level: int(types.High), Name: "high", Total: 4320, Done: 4320}},
			Owned:   chaindata.HeightRange{From: 0, To: 700_000},
			Pending: []chaindata.HeightRange{{From: 687_041, To: 687_140}}, InFlight: 100,
		},
	}
	b, err := json.Marshal(in)
	require.NoError(t, err)
	var out types.SchedulerInput
	require.NoError(t, json.Unmarshal(b, &out))
	require.Equal(t, in, out)
}
