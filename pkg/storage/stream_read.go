package storage

import (
	"context"
	"fmt"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/tideline-dev/tideline/pkg/chaindata"
)

// What a change-stream event carries besides its block, read for a run
// of heights at once (a page of events is a run of heights): every
// canonical row of the range, in order. The caller keeps the rows of the
// block each event names (block_hash), so an event of a block that a
// reorganisation took out since gets none.

// TransactionsInRange returns the canonical transactions of [from, to].
func (c *StreamReader) TransactionsInRange(ctx context.Context, chainID string, from, to uint64) ([]chaindata.Transaction, error) {
	return c.transactions(ctx, fmt.Sprintf("reading %s of chain %q in [%d, %d]", tableTransactions, chainID, from, to),
		rangeQuery{txReadColumns, txReadColumns, tableTransactions, "block_number, tx_index", chainID, from, to})
}

// LogsInRange returns the canonical logs of [from, to].
func (c *StreamReader) LogsInRange(ctx context.Context, chainID string, from, to uint64) ([]chaindata.Log, error) {
	return c.logs(ctx, fmt.Sprintf("reading %s of chain %q in [%d, %d]", tableLogs, chainID, from, to),
		rangeQuery{logReadColumns, logReadColumns, tableLogs, "block_number, log_index", chainID, from, to})
}

// TransfersInRange returns the canonical token transfers of [from, to].
func (c *StreamReader) TransfersInRange(ctx context.Context, chainID string, from, to uint64) ([]TokenTransfer, error) {
	var out []TokenTransfer
	err := c.query(ctx, fmt.Sprintf("reading %s of chain %q in [%d, %d]", tableTokenTransfers, chainID, from, to),
		rangeQuery{transferReadColumns, transferPlainColumns, tableTokenTransfers, transferKey, chainID, from, to},
		func(r driver.Rows) error {
			t, err := scanTransfer(r)
			out = append(out, t)
			return err
		})
	return out, err
}

// FramesInRange returns every canonical call frame of [from, to], the
// top-level ones too.
func (c *StreamReader) FramesInRange(ctx context.Context, chainID string, from, to uint64) ([]chaindata.Trace, error) {
	return c.traces(ctx, fmt.Sprintf("reading %s of chain %q in [%d, %d]", tableTraces, chainID, from, to),
		rangeQuery{traceReadColumns, traceReadColumns, tableTraces, "block_number, tx_index, trace_index", chainID, from, to})
}

// rangeQuery reads the newest canonical rows of a table in a height range
// (its height column is block_number), in key order.
type rangeQuery struct {
	outer, inner, table, key string
	chainID                  string
	from, to                 uint64
}

func (q rangeQuery) toSQL() (string, []any) {
	return newestCanonical(q.outer, q.inner, q.table, "chain_id = ? AND block_number BETWEEN ? AND ?", q.key) +
		" ORDER BY " + q.key, []any{q.chainID, q.from, q.to}
}
