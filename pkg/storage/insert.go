package storage

import (
	"context"
	"fmt"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// Inserts: only the indexer's store writes.

// insert sends a few rows, row by row, as one native block via
// PrepareBatch. Bulk data goes through insertColumns.
func (c *db) insert(ctx context.Context, s insertStmt, rows [][]any) error {
	batch, err := c.prepareInsert(ctx, s)
	if err != nil {
		return err
	}
	defer batch.Close()
	for i, row := range rows {
		if err := batch.Append(row...); err != nil {
			return fmt.Errorf("row %d: %w", i, err)
		}
	}
	return send(ctx, batch)
}

// insertColumns sends one table's n rows as one INSERT, a whole column at
// a time: cols[i] is a slice holding column s.columns[i] of every row. A
// column slice is appended with one typed copy, where row by row every
// value goes through `any` (BenchmarkBuildRows compares the two).
//
// The rows go in blocks of flushRows (Flush), not as one block: the
// driver's string columns grow by append, which for a buffer of tens of
// megabytes (the raw JSON of a thousand blocks) copies it about five times
// over; a block's buffers are kept after a flush, so they grow once, to
// one block's size. The server squashes the blocks of one INSERT into one
// part (min_insert_block_size_rows), so this adds no parts
// (TestWriteBlocksOnePartPerTable).
func (c *db) insertColumns(ctx context.Context, s insertStmt, n int, cols []any) error {
	if len(cols) != len(s.columns) {
		return fmt.Errorf("insert into %s: %d column slices for %d columns", s.table, len(cols), len(s.columns))
	}
	batch, err := c.prepareInsert(ctx, s)
	if err != nil {
		return err
	}
	defer batch.Close()
	for lo := 0; lo < n; lo += flushRows {
		hi := min(lo+flushRows, n)
		if lo > 0 {
			if err := batch.Flush(); err != nil {
				return fmt.Errorf("rows %d-%d: %w", lo, hi-1, err)
			}
		}
		for i, col := range cols {
			part, err := rowsOfColumn(col, lo, hi)
			if err != nil {
				return fmt.Errorf("column %s: %w", s.columns[i], err)
			}
			if err := batch.Column(i).Append(part); err != nil {
				return fmt.Errorf("column %s: %w", s.columns[i], err)
			}
		}
	}
	return send(ctx, batch)
}

// flushRows is the size of the blocks of insertColumns: a few megabytes of
// transactions with their raw JSON.
const flushRows = 4096

// rowsOfColumn returns rows [lo, hi) of one column slice of rows.go.
func rowsOfColumn(col any, lo, hi int) (any, error) {
	switch v := col.(type) {
	case []string:
		return v[lo:hi], nil
	case []uint64:
		return v[lo:hi], nil
	case []uint32:
		return v[lo:hi], nil
	case []uint8:
		return v[lo:hi], nil
	case []int64:
		return v[lo:hi], nil
	case []uint16: // traces.depth
		return v[lo:hi], nil
	case [][]uint32: // traces.trace_address
		return v[lo:hi], nil
	}
	return nil, fmt.Errorf("column slice of type %T is not one rows.go builds", col)
}

// prepareInsert starts an insert with the insert settings the server knows.
//
// The batch does not get the caller's context. clickhouse-go's Send runs a
// watchdog that closes the TCP connection when the batch's context ends,
// and stopping it does not wait for it (clickhouse-go PR #2032, open in
// Nov 2026): a context cancelled right after Send returns, as a per-call
// timeout is, can close a connection already back in the pool, and the
// next statement on it fails with "use of closed network connection" (seen
// here under load). So the batch's context only ends at its deadline (the
// earlier of the caller's and QueryTimeout), long after a finished Send's
// watchdog has exited, while a Send still running then is cut off as
// intended. The caller's cancellation is checked before preparing and
// before sending.
func (c *db) prepareInsert(ctx context.Context, s insertStmt) (driver.Batch, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(c.cfg.QueryTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	bctx, release := context.WithDeadline(context.WithoutCancel(ctx), deadline)
	time.AfterFunc(time.Until(deadline), release) // not earlier: see above
	query, _ := s.toSQL()
	return c.conn.PrepareBatch(clickhouse.Context(bctx, clickhouse.WithSettings(c.settings)), query)
}

// send sends a batch unless the caller gave up meanwhile.
func send(ctx context.Context, batch driver.Batch) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return batch.Send()
}
