package rpc

import "github.com/tideline-dev/tideline/pkg/chaindata"

// Reasons of Incomplete for blocks and receipts: well-formed answers that
// tideline keeps whole (the raw objects hold every field its columns do
// not) but cannot say everything about. Counted so that an operator sees
// a chain whose answers are partly opaque, never refused for it.
const (
	// A transaction type with no columns of its own (Arbitrum's 0x64–0x6a,
	// other L2s' system types): kept with its type number, its own fields
	// in the transaction's and the receipt's raw objects.
	IncompleteTxTypeUnknown = "tx_type_unknown"
	// A receipt with a state root and no status (before Byzantium): its
	// status is chaindata.StatusUnknown, the root kept in the raw receipt.
	IncompleteReceiptWithoutStatus = "receipt_without_status"
)

// knownTxType reports whether tideline has columns for every field of a
// transaction type: legacy, access list, dynamic fee, blob, set-code, and
// the OP stack's deposit (0x7e; its mint, sourceHash and depositNonce are
// in the raw objects, which is where the REST and Etherscan answers read
// them).
func knownTxType(t uint64) bool { return t <= 4 || t == 0x7e }

// countKeptTxs counts a decoded block's transactions of unknown types.
func (e *Ethereum) countKeptTxs(method string, data *chaindata.BlockData) {
	e.countKept(method, IncompleteTxTypeUnknown, data, func(tx *chaindata.Transaction) bool { return !knownTxType(tx.Type) })
}

// countKeptReceipts counts a block's receipts without a status, once they
// are applied.
func (e *Ethereum) countKeptReceipts(method string, data *chaindata.BlockData) {
	e.countKept(method, IncompleteReceiptWithoutStatus, data, func(tx *chaindata.Transaction) bool { return tx.Status == chaindata.StatusUnknown })
}

// countKept counts the block's transactions that kept counts under reason.
func (e *Ethereum) countKept(method, reason string, data *chaindata.BlockData, kept func(*chaindata.Transaction) bool) {
	n := 0
	for i := range data.Transactions {
		if kept(&data.Transactions[i]) {
			n++
		}
	}
	if n > 0 {
		e.metrics.incomplete(e.cfg.ChainID, e.cfg.EndpointName, method, reason, n)
	}
}
