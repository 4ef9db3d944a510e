package types_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
)

// blockTime is the seed's nominal block time: 24 h is exactly 4320 blocks.
const blockTime = 20 * time.Second

// blocksPerDay is 24 h / 20 s.
const blocksPerDay = 4320

func TestBlocksPerDay(t *testing.T) {
	require.Equal(t, uint64(blocksPerDay), uint64(types.HighMaxAge/blockTime))
	require.Equal(t, uint64(2*blocksPerDay), uint64(types.MediumMaxAge/blockTime))
	require.Equal(t, uint64(3*blocksPerDay), uint64(types.LowMaxAge/blockTime))
}

// distance below head → level; the boundaries are half-open: an age of
// exactly 24 h is no longer "the last 24 hours".
func TestLevelForAgeBoundaries(t *testing.T) {
	const head = 1_000_000
	cases := []struct {
		dist uint64
		want types.PriorityLevel
	}{
		{0, types.High},
		{1, types.High},
		{4319, types.High},
		{4320, types.Medium},
		{4321, types.Medium},
		{8639, types.Medium},
		{8640, types.Low},
		{12959, types.Low},
		{12960, types.UltraLow},
		{12961, types.UltraLow},
		{head, types.UltraLow}, // height 0
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("dist=%d", c.dist), func(t *testing.T) {
			require.Equal(t, c.want, types.LevelForAge(head, head-c.dist, blockTime))
		})
	}
	// At or above the head: the youngest backlog level, never UltraHigh
	// (that one is for live scheduling only).
	require.Equal(t, types.High, types.LevelForAge(head, head, blockTime))
	require.Equal(t, types.High, types.LevelForAge(head, head+5, blockTime))
	require.Equal(t, types.High, types.LevelForAge(0, 0, blockTime))
}

func TestMinHeightForLevelAt20s(t *testing.T) {
	const head = 20_000
	require.Equal(t, uint64(head-4319), types.MinHeightForLevel(head, 0, blockTime, types.High))   // 15681
	require.Equal(t, uint64(head-8639), types.MinHeightForLevel(head, 0, blockTime, types.Medium)) // 11361
	require.Equal(t, uint64(head-12959), types.MinHeightForLevel(head, 0, blockTime, types.Low))   // 7041
	require.Equal(t, uint64(0), types.MinHeightForLevel(head, 0, blockTime, types.UltraLow))       // floor
	require.Equal(t, uint64(123), types.MinHeightForLevel(head, 123, blockTime, types.UltraLow))   // floor
	require.Equal(t, uint64(123), types.MinHeightForLevel(head, 123, blockTime, types.UltraHigh))  // floor
	require.Equal(t, uint64(16000), types.MinHeightForLevel(head, 16000, blockTime, types.High))   // clamped to floor
	require.Equal(t, uint64(15681), types.MinHeightForLevel(head, 15680, blockTime, types.High))   // one below the boundary
	require.Equal(t, uint64(15681), types.MinHeightForLevel(head, 15681, blockTime, types.High))   // floor on the boundary
	require.Equal(t, uint64(500), types.MinHeightForLevel(100, 500, blockTime, types.High))        // head < floor
	require.Equal(t, uint64(0), types.MinHeightForLevel(4319, 0, blockTime, types.High))           // tiny chain: all High
	require.Equal(t, uint64(1), types.MinHeightForLevel(4320, 0, blockTime, types.High))           // height 0 is 24 h old
	require.Equal(t, uint64(0), types.MinHeightForLevel(4320, 0, blockTime, types.Medium))         // …and Medium
	require.Equal(t, uint64(0), types.MinHeightForLevel(0, 0, blockTime, types.High))              // genesis only
}

// MinHeightForLevel is arithmetic; LevelForAge is the per-height definition.
// They must agree for every block time, head and floor, including block
// times that do not divide a day.
func TestMinHeightForLevelMatchesLevelForAge(t *testing.T) {
	for _, bt := range []time.Duration{20 * time.Second, 12 * time.Second, 13 * time.Second, 2 * time.Second, 250 * time.Millisecond, 7 * time.Hour} {
		for _, head := range []uint64{0, 1, 10, 4319, 4320, 4321, 12959, 12960, 12961, 50_000, 700_000, 1_000_000} {
			for _, floor := range []uint64{0, 1, head / 2, head, head + 1} {
				for _, lvl := range types.Levels {
					lo := types.MinHeightForLevel(head, floor, bt, lvl)
					require.GreaterOrEqual(t, lo, floor)
					if head < floor {
						require.Equal(t, floor, lo)
						continue
					}
					// lo is at this level or a more urgent one …
					require.GreaterOrEqual(t, types.LevelForAge(head, lo, bt), lvl, "bt=%v head=%d floor=%d level=%v lo=%d", bt, head, floor, lvl, lo)
					// … and the height below it (if any above floor) is older.
					if lo > floor {
						require.Less(t, types.LevelForAge(head, lo-1, bt), lvl, "bt=%v head=%d floor=%d level=%v lo=%d", bt, head, floor, lvl, lo)
					}
				}
			}
		}
	}
}

func TestLevelSpans(t *testing.T) {
	span := func(l types.PriorityLevel, from, to uint64) types.LevelSpan {
		return types.LevelSpan{Level: l, Range: chaindata.HeightRange{From: from, To: to}}
	}
	cases := []struct {
		name        string
		head, floor uint64
		want        []types.LevelSpan
	}{
		{"full", 20_000, 0, []types.LevelSpan{
			span(types.High, 15681, 20000), span(types.Medium, 11361, 15680),
			span(types.Low, 7041, 11360), span(types.UltraLow, 0, 7040)}},
		{"700k", 700_000, 0, []types.LevelSpan{
			span(types.High, 695681, 700000), span(types.Medium, 691361, 695680),
			span(types.Low, 687041, 691360), span(types.UltraLow, 0, 687040)}},
		{"mixed 90001..100000", 100_000, 90_001, []types.LevelSpan{
			span(types.High, 95681, 100000), span(types.Medium, 91361, 95680), span(types.Low, 90001, 91360)}},
		{"tiny chain", 10, 0, []types.LevelSpan{span(types.High, 0, 10)}},
		{"genesis only", 0, 0, []types.LevelSpan{span(types.High, 0, 0)}},
		{"head == floor", 500, 500, []types.LevelSpan{span(types.High, 500, 500)}},
		{"head < floor", 100, 200, nil},
		{"floor on High boundary", 20_000, 15681, []types.LevelSpan{span(types.High, 15681, 20000)}},
		{"floor one below High boundary", 20_000, 15680, []types.LevelSpan{span(types.High, 15681, 20000), span(types.Medium, 15680, 15680)}},
		{"exactly 3 days", 12_959, 0, []types.LevelSpan{
			span(types.High, 8640, 12959), span(types.Medium, 4320, 8639), span(types.Low, 0, 4319)}},
		{"3 days + 1", 12_960, 0, []types.LevelSpan{
			span(types.High, 8641, 12960), span(types.Medium, 4321, 8640), span(types.Low, 1, 4320), span(types.UltraLow, 0, 0)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, types.LevelSpans(c.head, c.floor, blockTime))
		})
	}
}

// Spans cover [floor, head] exactly, newest first, contiguous, and every
// height in a span has the span's level by the per-height definition.
func TestLevelSpansCoverRange(t *testing.T) {
	for _, bt := range []time.Duration{20 * time.Second, 13 * time.Second} {
		for _, head := range []uint64{0, 3, 4320, 9000, 13_000, 30_000} {
			for _, floor := range []uint64{0, 1, 4000, 8641, head} {
				if floor > head {
					continue
				}
				spans := types.LevelSpans(head, floor, bt)
				require.NotEmpty(t, spans)
				require.Equal(t, head, spans[0].Range.To)
				require.Equal(t, floor, spans[len(spans)-1].Range.From)
				var n uint64
				for i, sp := range spans {
					if i > 0 {
						require.Equal(t, spans[i-1].Range.From-1, sp.Range.To, "contiguous")
						require.Less(t, sp.Level, spans[i-1].Level, "levels decrease")
					}
					for h := sp.Range.From; h <= sp.Range.To; h++ {
						if got := types.LevelForAge(head, h, bt); got != sp.Level {
							t.Fatalf("bt=%v head=%d floor=%d: height %d is in the %v span, its age gives %v", bt, head, floor, h, sp.Level, got)
						}
					}
					n += sp.Range.Len()
				}
				require.Equal(t, head-floor+1, n)
			}
		}
	}
}

func TestPriorityLevelString(t *testing.T) {
	require.Equal(t, "ultra_low", types.UltraLow.String())
	require.Equal(t, "low", types.Low.String())
	require.Equal(t, "medium", types.Medium.String())
	require.Equal(t, "high", types.High.String())
	require.Equal(t, "ultra_high", types.UltraHigh.String())
	require.Equal(t, "level(9)", types.PriorityLevel(9).String())
	require.Equal(t, []types.PriorityLevel{types.High, types.Medium, types.Low, types.UltraLow}, types.Levels)
}

// seed level (5 = most urgent) → Temporal PriorityKey (1 = most urgent).
func TestPriorityKey(t *testing.T) {
	cases := []struct {
		level types.PriorityLevel
		key   int
	}{
		{types.UltraHigh, 1},
		{types.High, 2},
		{types.Medium, 3},
		{types.Low, 4},
		{types.UltraLow, 5},
		// Out of range clamps to the ends.
		{types.PriorityLevel(0), 5},
		{types.PriorityLevel(-3), 5},
		{types.PriorityLevel(6), 1},
	}
	for _, c := range cases {
		t.Run(c.level.String(), func(t *testing.T) {
			require.Equal(t, c.key, c.level.PriorityKey())
		})
	}
}
