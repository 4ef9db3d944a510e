package activity

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/chaindata"
)

// A chunk is write_batch heights unless the rows bound says fewer: a probe
// before any estimate, then the bound over the rows per height of the last
// chunk; never more than what is left, never fewer than one.
func TestChunkLen(t *testing.T) {
	for _, tc := range []struct {
		name               string
		left, batch, bound int
		est                float64
		known              bool
		want               int
	}{
		{"no bound", 1000, 500, 0, 750, true, 500},
		{"light blocks: the bound is far", 1000, 500, 100_000, 61, true, 500},
		{"heavy blocks", 1000, 500, 100_000, 751, true, 133},
		{"a block above the bound alone", 1000, 500, 100_000, 250_000, true, 1},
		{"no estimate yet: a probe", 1000, 500, 100_000, 0, false, probeChunk},
		{"probe above write_batch", 1000, 16, 100_000, 0, false, 16},
		{"what is left", 40, 500, 100_000, 61, true, 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, chunkLen(tc.left, tc.batch, tc.bound, tc.est, tc.known))
		})
	}
}

// The estimate is the last fetched chunk's rows per height (block,
// transactions, logs, traces); an empty chunk leaves it as it was.
func TestRowsEstimate(t *testing.T) {
	var e rowsEstimate
	_, ok := e.get()
	require.False(t, ok)
	heavy := &chaindata.BlockData{Transactions: make([]chaindata.Transaction, 3), Logs: make([]chaindata.Log, 4), Traces: make([]chaindata.Trace, 2)}
	e.record([]*chaindata.BlockData{heavy, {}})
	got, ok := e.get()
	require.True(t, ok)
	require.InDelta(t, 5.5, got, 1e-9, "(10 + 1) rows over 2 heights")
	e.record(nil)
	got, _ = e.get()
	require.InDelta(t, 5.5, got, 1e-9)
}
