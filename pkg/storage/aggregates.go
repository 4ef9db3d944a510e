package storage

import (
	"context"
	"errors"
	"fmt"
)

// The aggregator's reads and writes (migration create_aggregates): the
// canonical blocks it counts, and the cumulative rows it writes. What the
// query API reads of aggregates is its own business (a row per height).

// BlockCount is what the aggregator reads of one canonical block: its
// link to the chain and what it adds to the totals.
type BlockCount struct {
	Number     uint64
	Hash       string
	ParentHash string
	Txs        uint64
	Logs       uint64
	Bytes      uint64 // the node's `size` of the block
}

// AggregateRow is one row of aggregates: the totals of every height from
// the chain's start height up to and including Number, and the hash of
// the block counted at Number.
type AggregateRow struct {
	Number    uint64
	BlockHash string
	Txs       uint64
	Logs      uint64
	Bytes     uint64
}

// Add returns the totals of r followed by block b.
func (r AggregateRow) Add(b BlockCount) AggregateRow {
	return AggregateRow{Number: b.Number, BlockHash: b.Hash, Txs: r.Txs + b.Txs, Logs: r.Logs + b.Logs, Bytes: r.Bytes + b.Bytes}
}

var aggregateColumns = []string{"chain_id", "number", "block_hash", "txs", "logs", "bytes", "version"}

// BlockCounts reads the canonical blocks of [from, to], ascending: FINAL
// for the newest row per height, then is_canonical = 1 in WHERE (never
// PREWHERE: on 18.16 that would filter before FINAL and let an orphaned
// row through). A height without a canonical block row (not written yet,
// or removed because the node no longer has it) is absent.
func (c *Aggregates) BlockCounts(ctx context.Context, chainID string, from, to uint64) ([]BlockCount, error) {
	fail := func(err error) ([]BlockCount, error) {
		return nil, fmt.Errorf("storage: reading the counts of %s for chain %q in [%d, %d]: %w", tableBlocks, chainID, from, to, err)
	}
	ctx, cancel := c.queryContext(ctx)
	defer cancel()
	query, args := blockCountsQuery{chainID, from, to}.toSQL()
	rows, err := c.conn.Query(ctx, query, args...)
	if err != nil {
		return fail(err)
	}
	defer rows.Close()
	out := make([]BlockCount, 0, to-from+1)
	for rows.Next() {
		var (
			b         BlockCount
			txs, logs uint32
		)
		if err := rows.Scan(&b.Number, &b.Hash, &b.ParentHash, &txs, &logs, &b.Bytes); err != nil {
			return fail(err)
		}
		b.Txs, b.Logs = uint64(txs), uint64(logs)
		out = append(out, b)
	}
	if err := rows.Err(); err != nil {
		return fail(err)
	}
	return out, nil
}

// AggregateRows reads the newest aggregates row of each height of [from,
// to] that has one, ascending (argMax by version: exact before and after
// merges).
func (c *Aggregates) AggregateRows(ctx context.Context, chainID string, from, to uint64) ([]AggregateRow, error) {
	fail := func(err error) ([]AggregateRow, error) {
		return nil, fmt.Errorf("storage: reading %s of chain %q in [%d, %d]: %w", tableAggregates, chainID, from, to, err)
	}
	ctx, cancel := c.queryContext(ctx)
	defer cancel()
	query, args := aggregateRowsQuery{chainID, from, to}.toSQL()
	rows, err := c.conn.Query(ctx, query, args...)
	if err != nil {
		return fail(err)
	}
	defer rows.Close()
	var out []AggregateRow
	for rows.Next() {
		var r AggregateRow
		if err := rows.Scan(&r.Number, &r.BlockHash, &r.Txs, &r.Logs, &r.Bytes); err != nil {
			return fail(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return fail(err)
	}
	return out, nil
}

// LastAggregate returns the chain's highest aggregates row; found is false
// when it has none. It reads the number column of every row of the chain:
// the aggregator's way back when its saved height is missing, not a hot
// path (the saved aggregator_height is).
func (c *Aggregates) LastAggregate(ctx context.Context, chainID string) (AggregateRow, bool, error) {
	var top, n uint64
	if err := c.queryRow(ctx, lastAggregateQuery{chainID}, &top, &n); err != nil {
		return AggregateRow{}, false, fmt.Errorf("storage: reading the highest %s row of chain %q: %w", tableAggregates, chainID, err)
	}
	if n == 0 {
		return AggregateRow{}, false, nil
	}
	rows, err := c.AggregateRows(ctx, chainID, top, top)
	if err != nil {
		return AggregateRow{}, false, err
	}
	if len(rows) != 1 {
		return AggregateRow{}, false, fmt.Errorf("storage: %s of chain %q: height %d is the highest but reads back %d rows", tableAggregates, chainID, top, len(rows))
	}
	return rows[0], true, nil
}

// WriteAggregates inserts rows (ascending, consecutive heights) in one
// insert, with a version above every earlier write of this process, so a
// height written again (after a reorganisation rewound the aggregator)
// replaces its old row.
func (c *Aggregates) WriteAggregates(ctx context.Context, chainID string, rows []AggregateRow) error {
	if chainID == "" {
		return errors.New("storage: WriteAggregates: empty chain id")
	}
	if len(rows) == 0 {
		return nil
	}
	version := c.clock.next()
	n := len(rows)
	ids, nums, hashes := make([]string, n), make([]uint64, n), make([]string, n)
	txs, logs, bytes, versions := make([]uint64, n), make([]uint64, n), make([]uint64, n), make([]uint64, n)
	for i, r := range rows {
		if i > 0 && r.Number != rows[i-1].Number+1 {
			return fmt.Errorf("storage: WriteAggregates chain %q: height %d follows %d; rows must be consecutive", chainID, r.Number, rows[i-1].Number)
		}
		ids[i], nums[i], hashes[i] = chainID, r.Number, r.BlockHash
		txs[i], logs[i], bytes[i], versions[i] = r.Txs, r.Logs, r.Bytes, version
	}
	err := c.insertColumns(ctx, insertStmt{tableAggregates, aggregateColumns}, n, []any{ids, nums, hashes, txs, logs, bytes, versions})
	if err != nil {
		return fmt.Errorf("storage: writing %s for chain %q heights %d-%d: %w", tableAggregates, chainID, rows[0].Number, rows[n-1].Number, err)
	}
	return nil
}

// blockCountsQuery reads the canonical blocks of a range: FINAL, then
// is_canonical = 1 in WHERE.
type blockCountsQuery struct {
	chainID  string
	from, to uint64
}

func (q blockCountsQuery) toSQL() (string, []any) {
	return "SELECT number, hash, parent_hash, tx_count, log_count, size FROM blocks FINAL" +
			" WHERE chain_id = ? AND number BETWEEN ? AND ? AND is_canonical = 1 ORDER BY number",
		[]any{q.chainID, q.from, q.to}
}

// aggregateRowsQuery reads the newest row per height of a range.
type aggregateRowsQuery struct {
	chainID  string
	from, to uint64
}

func (q aggregateRowsQuery) toSQL() (string, []any) {
	return "SELECT number, argMax(block_hash, version), argMax(txs, version), argMax(logs, version), argMax(bytes, version)" +
			" FROM aggregates WHERE chain_id = ? AND number BETWEEN ? AND ? GROUP BY number ORDER BY number",
		[]any{q.chainID, q.from, q.to}
}

// lastAggregateQuery is the highest height with a row, and the number of
// rows (max() of none is 0, which is a height).
type lastAggregateQuery struct{ chainID string }

func (q lastAggregateQuery) toSQL() (string, []any) {
	return "SELECT max(number), count() FROM aggregates WHERE chain_id = ?", []any{q.chainID}
}
