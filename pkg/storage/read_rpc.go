package storage

import (
	"context"
	"fmt"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/tideline-dev/tideline/pkg/chaindata"
)

// The JSON-RPC route's own reads (RPCReader): many transactions by hash
// and their logs in one read each (a batch), and a sender's transaction
// by nonce (Otterscan).

// SenderNonceTx returns the canonical transactions sent by sender with
// nonce in [from, to] (one, unless a chain replays nonces): the sender's
// heights come from address_txs, so the read follows the sender's
// activity, not the chain's length.
func (c *RPCReader) SenderNonceTx(ctx context.Context, chainID, sender string, nonce, from, to uint64) ([]chaindata.Transaction, error) {
	return c.transactions(ctx, fmt.Sprintf("reading %s of chain %q sent by %s with nonce %d", tableTransactions, chainID, sender, nonce),
		senderNonceQuery{chainID, sender, nonce, from, to})
}

// TxPositionsByHashes is TxPositionsByHash for many hashes in one read:
// each hash's positions in [lo, hi] (a reorganisation can leave stale
// look-ups; the caller checks the row).
func (c *RPCReader) TxPositionsByHashes(ctx context.Context, chainID string, hashes []string, lo, hi uint64) (map[string][]Position, error) {
	out := map[string][]Position{}
	if len(hashes) == 0 {
		return out, nil
	}
	err := c.query(ctx, fmt.Sprintf("reading %s of chain %q for %d hashes", tableTxByHash, chainID, len(hashes)),
		txPositionsByHashesQuery{chainID, hashes, lo, hi}, func(r driver.Rows) error {
			var h string
			var p Position
			err := r.Scan(&h, &p.Block, &p.Index)
			out[h] = append(out[h], p)
			return err
		})
	return out, err
}

// ReceiptTxsAt is TransactionsAt with only what a receipt is built from
// (receipt_raw and the receipt's columns); Raw, Value, Nonce, Gas, GasPrice
// and LogCount are left zero (txReceiptColumns). raw is most of
// transactions' bytes (593 of 990 MB on the 100,000-height bench index),
// and a batch's positions are scattered, where every column named is one
// more random read per position.
func (c *RPCReader) ReceiptTxsAt(ctx context.Context, chainID string, ps []Position) ([]chaindata.Transaction, error) {
	if len(ps) == 0 {
		return nil, nil
	}
	return c.transactions(ctx, fmt.Sprintf("reading receipts of %s of chain %q at %d positions", tableTransactions, chainID, len(ps)),
		transactionsAtQuery{chainID, ps, txReceiptColumns})
}

// LogsOfTxs returns the canonical logs of the transactions at ps (their
// receipts' logs) in one read, in order.
func (c *RPCReader) LogsOfTxs(ctx context.Context, chainID string, ps []Position) ([]chaindata.Log, error) {
	if len(ps) == 0 {
		return nil, nil
	}
	return c.logs(ctx, fmt.Sprintf("reading %s of chain %q for %d transactions", tableLogs, chainID, len(ps)),
		logsOfTxsQuery{chainID, ps})
}

// senderNonceQuery reads a sender's canonical transaction with a nonce:
// the heights where the sender appears (address_txs), then the newest
// version of each transaction there, kept when it is canonical and the
// sender's with that nonce (tested after the newest version is chosen,
// so a row a reorganisation replaced is never found).
type senderNonceQuery struct {
	chainID  string
	sender   string
	nonce    uint64
	from, to uint64
}

func (q senderNonceQuery) toSQL() (string, []any) {
	heights := newestCanonical("block_number", "block_number, tx_index", "address_txs",
		"chain_id = ? AND address = ? AND block_number BETWEEN ? AND ?", "block_number, tx_index")
	return newestCanonical(txReadColumns, txReadColumns, "transactions",
			"chain_id = ? AND block_number IN ("+heights+")", "block_number, tx_index") +
			" AND from_address = ? AND nonce = ? ORDER BY block_number, tx_index",
		[]any{q.chainID, q.chainID, q.sender, q.from, q.to, q.sender, q.nonce}
}

// txPositionsByHashesQuery is txPositionsByHashQuery for many hashes.
type txPositionsByHashesQuery struct {
	chainID  string
	hashes   []string
	min, max uint64
}

func (q txPositionsByHashesQuery) toSQL() (string, []any) {
	args := []any{q.chainID}
	args = appendStrings(args, q.hashes)
	return newestCanonical("hash, block_number, tx_index", "hash, block_number, tx_index", "tx_by_hash",
			"chain_id = ? AND hash IN ("+placeholders(len(q.hashes))+") AND block_number BETWEEN ? AND ?", "hash, block_number, tx_index") +
			" ORDER BY hash, block_number, tx_index",
		append(args, q.min, q.max)
}

// logsOfTxsQuery reads the canonical logs of transactions: their heights'
// newest log rows, kept when canonical and of one of the transactions
// (tx_index is not in the key: tested after the newest version is chosen).
type logsOfTxsQuery struct {
	chainID   string
	positions []Position
}

func (q logsOfTxsQuery) toSQL() (string, []any) {
	seen := map[uint64]bool{}
	var heights []any
	for _, p := range q.positions {
		if !seen[p.Block] {
			seen[p.Block] = true
			heights = append(heights, p.Block)
		}
	}
	cond, pargs := positionsIn("tx_index", q.positions)
	args := append([]any{q.chainID}, heights...)
	return newestCanonical(logReadColumns, logReadColumns, "logs",
			"chain_id = ? AND block_number IN ("+placeholders(len(heights))+")", "block_number, log_index") +
			" AND " + cond + " ORDER BY block_number, log_index",
		append(args, pargs...)
}
