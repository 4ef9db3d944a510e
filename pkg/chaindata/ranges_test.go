package chaindata_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/chaindata"
)

type hr = chaindata.HeightRange

func TestHeightRangeLen(t *testing.T) {
	require.Equal(t, uint64(1), hr{From: 7, To: 7}.Len())
	require.Equal(t, uint64(700_001), hr{From: 0, To: 700_000}.Len())
	require.Equal(t, uint64(0), hr{From: 8, To: 7}.Len())
	require.Equal(t, uint64(1), hr{}.Len()) // {0,0} is height 0
	require.Equal(t, uint64(0), hr{From: 0, To: ^uint64(0)}.Len(), "the full uint64 range wraps: callers never build it")
}

func TestHeightRangeContains(t *testing.T) {
	r := hr{From: 10, To: 12}
	require.False(t, r.Contains(9))
	require.True(t, r.Contains(10))
	require.True(t, r.Contains(12))
	require.False(t, r.Contains(13))
	require.False(t, hr{From: 5, To: 4}.Contains(4), "empty range holds nothing")
	require.True(t, hr{From: 1, To: ^uint64(0)}.Contains(^uint64(0)))
}

func TestDescending(t *testing.T) {
	require.Equal(t, []uint64{12, 11, 10}, hr{From: 10, To: 12}.Descending())
	require.Equal(t, []uint64{0}, hr{}.Descending())
	require.Equal(t, []uint64{1, 0}, hr{From: 0, To: 1}.Descending(), "stops at 0 without wrapping")
	require.Empty(t, hr{From: 8, To: 7}.Descending())
}

func TestTotalLenAndSpan(t *testing.T) {
	rs := []hr{{From: 0, To: 9}, {From: 5000, To: 5009}, {From: 19995, To: 20000}}
	require.Equal(t, uint64(26), chaindata.TotalLen(rs))
	require.Equal(t, hr{From: 0, To: 20000}, chaindata.Span(rs))
	require.Equal(t, uint64(0), chaindata.TotalLen(nil))
	require.Equal(t, hr{}, chaindata.Span(nil))
	require.Equal(t, hr{From: 3, To: 4}, chaindata.Span([]hr{{From: 3, To: 4}}))
}

func TestOverlap(t *testing.T) {
	rs := []hr{{From: 0, To: 9}, {From: 20, To: 29}}
	require.Equal(t, uint64(0), chaindata.Overlap(nil, hr{From: 0, To: 100}))
	require.Equal(t, uint64(20), chaindata.Overlap(rs, hr{From: 0, To: 100}))
	require.Equal(t, uint64(5+3), chaindata.Overlap(rs, hr{From: 5, To: 22}))
	require.Equal(t, uint64(0), chaindata.Overlap(rs, hr{From: 10, To: 19}), "between the ranges")
	require.Equal(t, uint64(1), chaindata.Overlap(rs, hr{From: 29, To: ^uint64(0)}), "open-ended top")
}

func TestSubtract(t *testing.T) {
	rs := []hr{{From: 0, To: 9}, {From: 20, To: 29}, {From: 40, To: 49}}
	require.Equal(t, rs, chaindata.Subtract(rs, hr{From: 10, To: 19}), "cut between ranges")
	require.Equal(t, []hr{{From: 0, To: 4}, {From: 45, To: 49}}, chaindata.Subtract(rs, hr{From: 5, To: 44}), "cut across")
	require.Equal(t, []hr{{From: 0, To: 9}, {From: 20, To: 21}, {From: 28, To: 29}, {From: 40, To: 49}},
		chaindata.Subtract(rs, hr{From: 22, To: 27}), "cut inside one range splits it")
	require.Empty(t, chaindata.Subtract(rs, hr{From: 0, To: 49}), "cut everything")
	require.Empty(t, chaindata.Subtract(nil, hr{From: 0, To: 1}))
}

func TestNewest(t *testing.T) {
	rs := []hr{{From: 0, To: 9}, {From: 20, To: 29}}
	require.Equal(t, []hr{{From: 25, To: 29}}, chaindata.Newest(rs, 5))
	require.Equal(t, []hr{{From: 20, To: 29}}, chaindata.Newest(rs, 10))
	require.Equal(t, []hr{{From: 7, To: 9}, {From: 20, To: 29}}, chaindata.Newest(rs, 13))
	require.Equal(t, rs, chaindata.Newest(rs, 1000), "n beyond the total keeps all")
	require.Empty(t, chaindata.Newest(rs, 0))
}

func TestToRanges(t *testing.T) {
	require.Empty(t, chaindata.ToRanges(nil))
	require.Equal(t, []hr{{From: 5, To: 5}}, chaindata.ToRanges([]uint64{5}))
	require.Equal(t, []hr{{From: 0, To: 2}, {From: 7, To: 8}, {From: 10, To: 10}},
		chaindata.ToRanges([]uint64{0, 1, 2, 7, 8, 10}))
}

// Folding heights into ranges and listing them again gives the same set.
func TestToRangesRoundTrip(t *testing.T) {
	hs := []uint64{3, 4, 5, 9, 11, 12}
	var back []uint64
	for _, r := range chaindata.ToRanges(hs) {
		d := r.Descending()
		for i := len(d) - 1; i >= 0; i-- {
			back = append(back, d[i])
		}
	}
	require.Equal(t, hs, back)
	require.Equal(t, uint64(len(hs)), chaindata.TotalLen(chaindata.ToRanges(hs)))
}
