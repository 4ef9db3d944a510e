package storage

import (
	"context"
	"fmt"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/tideline-dev/tideline/pkg/chaindata"
)

// The query API's reads of transactions and logs: by hash, position,
// block, address and filter.

// TxPositionsByHash returns the canonical positions of a transaction hash
// in [lo, hi] from tx_by_hash, first by height.
func (c *Reader) TxPositionsByHash(ctx context.Context, chainID, hash string, lo, hi uint64) ([]Position, error) {
	return c.positions(ctx, fmt.Sprintf("reading %s of chain %q", tableTxByHash, chainID),
		txPositionsByHashQuery{chainID, hash, lo, hi})
}

// TransactionsAt returns the canonical transactions at the positions,
// ascending; a position without one is left out.
func (c *Reader) TransactionsAt(ctx context.Context, chainID string, ps []Position) ([]chaindata.Transaction, error) {
	if len(ps) == 0 {
		return nil, nil
	}
	return c.transactions(ctx, fmt.Sprintf("reading %s of chain %q at %d positions", tableTransactions, chainID, len(ps)),
		transactionsAtQuery{chainID, ps, txAllColumns})
}

// TxFee is what a transaction paid.
type TxFee struct {
	Hash              string
	GasPrice          string // decimal wei, "" if the node omitted it
	EffectiveGasPrice string // decimal wei, "" if the receipt omitted it
	GasUsed           uint64
}

// TransactionFees returns the fees of the canonical transactions at the
// positions that have one, reading no raw JSON.
func (c *Reader) TransactionFees(ctx context.Context, chainID string, ps []Position) (map[Position]TxFee, error) {
	out := make(map[Position]TxFee, len(ps))
	if len(ps) == 0 {
		return out, nil
	}
	err := c.query(ctx, fmt.Sprintf("reading fees of %s of chain %q at %d positions", tableTransactions, chainID, len(ps)),
		txFeesQuery{chainID, ps},
		func(r driver.Rows) error {
			var p Position
			var f TxFee
			if err := r.Scan(&p.Block, &p.Index, &f.Hash, &f.GasPrice, &f.EffectiveGasPrice, &f.GasUsed); err != nil {
				return err
			}
			out[p] = f
			return nil
		})
	return out, err
}

// BlockTransactions returns up to limit canonical transactions of a
// block from index `from` on, in order.
func (c *Reader) BlockTransactions(ctx context.Context, chainID string, height uint64, from uint32, limit int) ([]chaindata.Transaction, error) {
	return c.transactions(ctx, fmt.Sprintf("reading %s of chain %q at height %d", tableTransactions, chainID, height),
		blockTransactionsQuery{chainID, height, from, limit})
}

// AddressTxQuery selects an address's transactions.
type AddressTxQuery struct {
	Address  string // lower-case 0x address
	From, To uint64 // heights, inclusive
	Desc     bool   // newest first
	After    *Position
	Limit    int
	Offset   int
}

// AddressTxPositions lists the positions of an address's transactions
// (sent, received or creating a contract) from address_txs.
func (c *Reader) AddressTxPositions(ctx context.Context, chainID string, q AddressTxQuery) ([]Position, error) {
	return c.positions(ctx, fmt.Sprintf("reading %s of chain %q", tableAddressTxs, chainID),
		addressTxPositionsQuery{chainID, q.Address, q.From, q.To, q.Desc, q.After, q.Limit, q.Offset})
}

// LogQuery selects logs in a height range.
type LogQuery struct {
	From, To uint64
	Filter   LogFilter
	After    *Position
	Limit    int
	Offset   int
}

// Logs returns the canonical logs that q selects, in order.
func (c *Reader) Logs(ctx context.Context, chainID string, q LogQuery) ([]chaindata.Log, error) {
	return c.logsNamed(ctx, chainID, q, maxNamedHeights)
}

// maxNamedHeights is how many heights a filter's look-ups may name for the
// logs' read to take them as a list (two lists of 5,000 heights are about
// 80 KB of statement, under the server's max_query_size of 256 KiB); with
// more, the look-ups are read inside the logs' read.
const maxNamedHeights = 5000

// logsNamed is Logs with the limit of named heights given. With look-ups,
// the heights they name are read first: none is an empty answer at once,
// up to most are read as a list.
func (c *Reader) logsNamed(ctx context.Context, chainID string, q LogQuery, most int) ([]chaindata.Log, error) {
	what := fmt.Sprintf("reading %s of chain %q in [%d, %d]", tableLogs, chainID, q.From, q.To)
	lq := logsQuery{chainID: chainID, from: q.From, to: q.To, filter: q.Filter, after: q.After, limit: q.Limit, offset: q.Offset}
	if len(lq.lookups()) > 0 {
		var heights []uint64
		err := c.query(ctx, what, namedHeightsQuery{lq, most + 1}, func(r driver.Rows) error {
			var h uint64
			err := r.Scan(&h)
			heights = append(heights, h)
			return err
		})
		if err != nil {
			return nil, err
		}
		if len(heights) == 0 {
			return nil, nil
		}
		if len(heights) <= most {
			lq.heights = heights
		}
	}
	return c.logs(ctx, what, lq)
}

// TxLogs returns the canonical logs of the transaction at a position.
func (c *Reader) TxLogs(ctx context.Context, chainID string, p Position) ([]chaindata.Log, error) {
	return c.logs(ctx, fmt.Sprintf("reading %s of chain %q at %d/%d", tableLogs, chainID, p.Block, p.Index),
		txLogsQuery{chainID, p.Block, p.Index})
}
