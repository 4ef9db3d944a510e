package catchup

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAmplificationArithmetic(t *testing.T) {
	require.InDelta(t, 4.0, tableWrites{Merged: 8e9, Inserted: 2e9}.amplification(), 1e-12)
	require.Zero(t, tableWrites{Inserted: 5}.amplification(), "inserted, never merged")
	require.Equal(t, -1.0, tableWrites{Merged: 5}.amplification(), "nothing inserted: undefined, not zero or Inf")
	require.Equal(t, -1.0, sumWrites(nil).amplification())

	// The total is bytes over bytes, not the mean of the ratios: a big
	// table rewritten twice outweighs a tiny one rewritten ten times.
	ws := []tableWrites{
		{Table: "tiny", Merged: 10, Inserted: 1},
		{Table: "big", Merged: 2000, Inserted: 1000},
	}
	total := sumWrites(ws)
	require.Equal(t, tableWrites{Merged: 2010, Inserted: 1001}, total)
	require.InDelta(t, 2010.0/1001, total.amplification(), 1e-12)
}

func TestMergesLineSortedByMergedBytes(t *testing.T) {
	ws := []tableWrites{
		{Table: "logs", Merged: 14.8e9, Inserted: 3.6e9},
		{Table: "blocks", Merged: 0, Inserted: 0.2e9},
		{Table: "transactions", Merged: 26.6e9, Inserted: 6.4e9},
		{Table: "address_txs", Merged: 14.8e9, Inserted: 2.5e9},
	}
	byMerged(ws)
	var order []string
	for _, w := range ws {
		order = append(order, w.Table)
	}
	require.Equal(t, []string{"transactions", "address_txs", "logs", "blocks"}, order, "most merged first, ties by name")
	require.Equal(t, "merges (part log of tideline_bench, merged/inserted): 56.200/12.700 GB = 4.43; "+
		"transactions 26.600/6.400 GB = 4.16; address_txs 14.800/2.500 GB = 5.92; logs 14.800/3.600 GB = 4.11; blocks 0.000/0.200 GB = 0.00",
		mergesLine(ws))
}
