package types_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/indexer/types"
)

func TestHeightRangeLen(t *testing.T) {
	require.Equal(t, uint64(1), types.HeightRange{From: 7, To: 7}.Len())
	require.Equal(t, uint64(700_001), types.HeightRange{From: 0, To: 700_000}.Len())
	require.Equal(t, uint64(0), types.HeightRange{From: 8, To: 7}.Len())
	require.Equal(t, uint64(1), types.HeightRange{}.Len()) // {0,0} is height 0
}

func TestTotalLenAndSpan(t *testing.T) {
	rs := []types.HeightRange{{From: 0, To: 9}, {From: 5000, To: 5009}, {From: 19995, To: 20000}}
	require.Equal(t, uint64(26), types.TotalLen(rs))
	require.Equal(t, types.HeightRange{From: 0, To: 20000}, types.Span(rs))
	require.Equal(t, uint64(0), types.TotalLen(nil))
	require.Equal(t, types.HeightRange{}, types.Span(nil))
	require.Equal(t, types.HeightRange{From: 3, To: 4}, types.Span([]types.HeightRange{{From: 3, To: 4}}))
}

// The scheduler's input is what ContinueAsNew carries; it must survive the
// JSON data converter unchanged.
func TestSchedulerInputRoundTrip(t *testing.T) {
	in := types.SchedulerInput{
		ChainID:   "test",
		Head:      700_000,
		Remaining: []types.HeightRange{{From: 0, To: 687_040}},
		State: types.SchedulerState{
			Runs: 3, Scheduled: 12_960,
			Buckets: []types.BucketProgress{{Level: types.High, Name: "high", Total: 4320, Done: 4320}},
			Owned:   types.HeightRange{From: 0, To: 700_000},
			Pending: []types.HeightRange{{From: 687_041, To: 687_140}}, InFlight: 100,
		},
	}
	b, err := json.Marshal(in)
	require.NoError(t, err)
	var out types.SchedulerInput
	require.NoError(t, json.Unmarshal(b, &out))
	require.Equal(t, in, out)
}
