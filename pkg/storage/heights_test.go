package storage

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/chain"
)

func TestUnknownSpan(t *testing.T) {
	full := func(ks ...uint64) map[uint64]bool {
		m := map[uint64]bool{}
		for _, k := range ks {
			m[k] = true
		}
		return m
	}
	cases := []struct {
		lo, hi, chunk uint64
		full          map[uint64]bool
		want          chain.HeightRange
		ok            bool
	}{
		{0, 99, 10, nil, chain.HeightRange{From: 0, To: 99}, true},
		{0, 99, 10, full(0, 1, 2), chain.HeightRange{From: 30, To: 99}, true},
		{0, 99, 10, full(8, 9), chain.HeightRange{From: 0, To: 79}, true},
		{5, 94, 10, full(0, 9), chain.HeightRange{From: 10, To: 89}, true},
		{5, 94, 10, full(1, 2, 3, 4, 5, 6, 7, 8), chain.HeightRange{From: 5, To: 94}, true},
		{0, 99, 10, full(0, 1, 2, 3, 4, 5, 6, 7, 8, 9), chain.HeightRange{}, false},
		{13, 17, 10, full(1), chain.HeightRange{}, false},
		{13, 17, 10, full(0), chain.HeightRange{From: 13, To: 17}, true},
		{^uint64(0) - 3, ^uint64(0), 10, nil, chain.HeightRange{From: ^uint64(0) - 3, To: ^uint64(0)}, true},
	}
	for _, tc := range cases {
		got, ok := unknownSpan(tc.lo, tc.hi, tc.chunk, tc.full)
		require.Equal(t, tc.ok, ok, "%+v", tc)
		require.Equal(t, tc.want, got, "%+v", tc)
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
