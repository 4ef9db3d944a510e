package storage

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/tokens"
)

// TokensInRange names each token that moved in a range once, with the
// lowest height it moved at there and when its earliest written transfer
// there was written (the token metadata job's delay starts there).
func TestTokensInRangeSaysWhereAndWhenATokenFirstMoved(t *testing.T) {
	c := openTest(t)
	ctx := testContext(t)
	write := func(n uint64) (before, after time.Time) {
		before = time.Now()
		require.NoError(t, c.WriteBlocks(ctx, "1", []*chaindata.BlockData{transferBlock(n)}))
		return before, time.Now()
	}
	// The higher height first, as a catch-up writes.
	before31, after31 := write(31)
	before30, after30 := write(30)
	require.NoError(t, c.WriteBlocks(ctx, "1", []*chaindata.BlockData{sampleBlock(32)}))

	tc := c.Tokens()
	check := func(from, to, first uint64, before, after time.Time) {
		t.Helper()
		seen, err := tc.TokensInRange(ctx, "1", from, to)
		require.NoError(t, err)
		require.Len(t, seen, 3)
		standards := map[string]string{}
		for _, s := range seen {
			standards[s.Token] = s.Standard
			require.Equal(t, first, s.FirstHeight, "%s in [%d, %d]", s.Token, from, to)
			require.False(t, s.FirstWritten.Before(before.Truncate(time.Microsecond)), "%s written at %s, before %s", s.Token, s.FirstWritten, before)
			require.False(t, s.FirstWritten.After(after), "%s written at %s, after %s", s.Token, s.FirstWritten, after)
		}
		require.Equal(t, map[string]string{tokenA: tokens.ERC20, tokenB: tokens.ERC721, tokenC: tokens.ERC1155}, standards)
	}
	check(30, 32, 30, before31, after31) // height 30 is lowest, 31's rows the earliest written
	check(30, 30, 30, before30, after30)
	check(31, 31, 31, before31, after31)
	seen, err := tc.TokensInRange(ctx, "1", 32, 40)
	require.NoError(t, err)
	require.Empty(t, seen)
}
