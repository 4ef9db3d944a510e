package rpc

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/chaindata"
)

// A receipt with a state root instead of a status (before Byzantium) is
// stored as StatusUnknown, its root kept in ReceiptRaw; a status is taken
// as given.
func TestPreByzantiumReceiptStatusIsUnknown(t *testing.T) {
	var unknown, known int
	for i := range 60 {
		height := uint64(5000 + i)
		block, receipts := genBlock(height, uint64(i), genOptions{Txs: 9, LogsPerTx: 1, Odd: true})
		got, err := decodeFull(height, block, receipts)
		require.NoError(t, err)
		for _, tx := range got.Transactions {
			if bytes.Contains(tx.ReceiptRaw, []byte(`"root"`)) {
				require.Equal(t, chaindata.StatusUnknown, tx.Status, tx.Hash)
				unknown++
			} else {
				require.Contains(t, []uint8{chaindata.StatusFailure, chaindata.StatusSuccess}, tx.Status, tx.Hash)
				known++
			}
		}
	}
	require.Positive(t, unknown)
	require.Positive(t, known)
}
