package storage

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/chaindata"
)

func TestUnknownRuns(t *testing.T) {
	full := func(ks ...uint64) map[uint64]bool {
		m := map[uint64]bool{}
		for _, k := range ks {
			m[k] = true
		}
		return m
	}
	type r = chaindata.HeightRange
	cases := []struct {
		lo, hi, chunk uint64
		full          map[uint64]bool
		want          []r
	}{
		{0, 99, 10, nil, []r{{From: 0, To: 99}}},
		{0, 99, 10, full(0, 1, 2), []r{{From: 30, To: 99}}},
		{0, 99, 10, full(8, 9), []r{{From: 0, To: 79}}},
		{5, 94, 10, full(0, 9), []r{{From: 10, To: 89}}},
		{5, 94, 10, full(1, 2, 3, 5, 6, 7, 8), []r{{From: 5, To: 9}, {From: 40, To: 49}, {From: 90, To: 94}}},
		{0, 99, 10, full(0, 1, 2, 3, 4, 5, 6, 7, 8, 9), nil},
		{13, 17, 10, full(1), nil},
		{13, 17, 10, full(0), []r{{From: 13, To: 17}}},
		{^uint64(0) - 3, ^uint64(0), 10, full(0), []r{{From: ^uint64(0) - 3, To: ^uint64(0)}}},
	}
	for _, tc := range cases {
		require.Equal(t, tc.want, unknownRuns(tc.lo, tc.hi, tc.chunk, tc.full), "%+v", tc)
	}
}

// A scan records exactly the complete chunks it counted (not partial ones
// at its edges, not ones with holes), and a later scan skips a recorded
// chunk without reading its marks.
func TestScanRecordsAndSkipsCompleteChunks(t *testing.T) {
	c := openTest(t)
	ctx := testContext(t)
	c.scanChunk, c.scanWindow = 10, 100
	var hs []uint64
	for h := uint64(0); h < 100; h++ {
		if h != 42 && h != 77 {
			hs = append(hs, h)
		}
	}
	writeMarks(t, c, "1", hs...)

	got, err := c.MissingHeights(ctx, "1", 5, 95, 100)
	require.NoError(t, err)
	require.Equal(t, []uint64{42, 77}, got)
	recorded, err := c.fullChunks(ctx, "1", 0, 1000)
	require.NoError(t, err)
	// 0 and 9 were only partly inside [5, 95]; 4 and 7 have holes.
	require.Equal(t, map[uint64]bool{1: true, 2: true, 3: true, 5: true, 6: true, 8: true}, recorded)

	// Another chain's chunks and another chunk size are other records.
	other, err := c.fullChunks(ctx, "2", 0, 1000)
	require.NoError(t, err)
	require.Empty(t, other)
	c.scanChunk = 20
	bigger, err := c.fullChunks(ctx, "1", 0, 1000)
	require.NoError(t, err)
	require.Empty(t, bigger)
	c.scanChunk = 10

	// A recorded chunk is trusted, not read: record chunk 4 (which has a
	// hole, something a scan never does) and the hole is no longer seen.
	require.NoError(t, c.recordFullChunks(ctx, "1", []uint64{4}))
	got, err = c.MissingHeights(ctx, "1", 0, 99, 100)
	require.NoError(t, err)
	require.Equal(t, []uint64{77}, got)
	h, found, err := c.Watermark(ctx, "1", 0)
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, uint64(76), h)
}
