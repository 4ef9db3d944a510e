package verify

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/simchain"
)

func TestMismatch(t *testing.T) {
	e := simchain.Expected{Height: 5, Hash: "0xaa", TxCount: 2, LogCount: 3}
	ok := stored{block: true, hash: "0xaa", blockTxs: 2, blockLogs: 3, txs: 2, logs: 3,
		txHashes: 1, logHashes: 1, txHash: "0xaa", logHash: "0xaa"}
	require.Empty(t, mismatch(e, ok))
	for name, s := range map[string]stored{
		"no block":           {},
		"other hash":         func() stored { s := ok; s.hash = "0xbb"; return s }(),
		"block row counts":   func() stored { s := ok; s.blockLogs = 2; return s }(),
		"a transaction less": func() stored { s := ok; s.txs = 1; return s }(),
		"a log more":         func() stored { s := ok; s.logs = 4; return s }(),
		"txs of two blocks":  func() stored { s := ok; s.txHashes = 2; return s }(),
		"logs of another":    func() stored { s := ok; s.logHash = "0xbb"; return s }(),
	} {
		require.NotEmpty(t, mismatch(e, s), name)
	}
	// An empty block has no transaction or log rows to compare hashes of.
	empty := simchain.Expected{Hash: "0xcc"}
	require.Empty(t, mismatch(empty, stored{block: true, hash: "0xcc"}))
}

func TestDuplicates(t *testing.T) {
	v := Result{DistinctBlocks: 100, BlockRows: 100, MarkRows: 100, DistinctMarks: 100}
	require.Zero(t, Duplicates(100, v))
	require.Zero(t, Duplicates(-1, v), "no counter: rows alone")
	require.Zero(t, Duplicates(90, v), "a counter below the heights stored is not a negative duplicate")
	require.Equal(t, uint64(3), Duplicates(103, v), "three writes more than heights")
	v.MarkRows = 105
	require.Equal(t, uint64(5), Duplicates(103, v), "unmerged marks show more")
	v.BlockRows = 107
	require.Equal(t, uint64(7), Duplicates(-1, v))
}
