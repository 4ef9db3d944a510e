package storage

import (
	"context"
	"encoding/hex"
	"fmt"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/tideline-dev/tideline/pkg/chaindata"
)

// The query API's reads of call traces (migrations 0051-0053), by the
// rules of read_queries.go: the newest version per key, is_canonical = 1
// outside it; address_traces only says where a frame is, the frame is
// read from traces and checked by the caller.

// TracePosition is where a frame sits: its height, its transaction's
// index in the block and its index in the transaction.
type TracePosition struct {
	Block uint64
	Tx    uint32
	Index uint32
}

// traceReadColumns are read into chaindata.Trace, in scanTrace's order.
const traceReadColumns = "block_number, block_hash, tx_index, trace_index, tx_hash, trace_address, type," +
	" from_address, to_address, value, gas, gas_used, input, output, error, revert_reason, reverted, subtraces"

// transfersSQL is Transfers (traces_rows.go) in SQL, for reads of traces
// itself: what Etherscan's txlistinternal lists.
const transfersSQL = "(type IN ('create', 'create2', 'selfdestruct') OR (type = 'call' AND value != '0'))"

func scanTrace(r driver.Rows) (chaindata.Trace, error) {
	var t chaindata.Trace
	var typ string
	var reverted uint8
	var input, output string // bytes (0058)
	err := r.Scan(&t.BlockNumber, &t.BlockHash, &t.TxIndex, &t.Index, &t.TxHash, &t.Address, &typ,
		&t.From, &t.To, &t.Value, &t.Gas, &t.GasUsed, &input, &output, &t.Error, &t.RevertReason, &reverted, &t.Subtraces)
	t.Type, t.Reverted = chaindata.TraceType(typ), reverted == 1
	t.Input, t.Output = "0x"+hex.EncodeToString([]byte(input)), "0x"+hex.EncodeToString([]byte(output))
	if len(t.Address) == 0 {
		t.Address = nil
	}
	return t, err
}

func (c *db) traces(ctx context.Context, what string, s statement) ([]chaindata.Trace, error) {
	var out []chaindata.Trace
	err := c.query(ctx, what, s, func(r driver.Rows) error {
		t, err := scanTrace(r)
		out = append(out, t)
		return err
	})
	return out, err
}

// TxTraces returns the canonical frames of the transaction at a position,
// in order (index 0, the top-level call, first); none when its height was
// not traced.
func (c *TraceReader) TxTraces(ctx context.Context, chainID string, p Position) ([]chaindata.Trace, error) {
	return c.traces(ctx, fmt.Sprintf("reading %s of chain %q at %d/%d", tableTraces, chainID, p.Block, p.Index),
		txTracesQuery{chainID, p.Block, p.Index})
}

// BlockTraces returns the canonical frames of a height, every
// transaction's, in order (by transaction, then frame); none when it was
// not traced. One read for what TxTraces would read per transaction.
func (c *TraceReader) BlockTraces(ctx context.Context, chainID string, height uint64) ([]chaindata.Trace, error) {
	return c.traces(ctx, fmt.Sprintf("reading %s of chain %q at %d", tableTraces, chainID, height),
		blockTracesQuery{chainID, height})
}

// TracedHeights tells, for each of a few heights, whether its mark says
// its traces are in (a height without a mark is left out).
func (c *TraceReader) TracedHeights(ctx context.Context, chainID string, heights []uint64) (map[uint64]bool, error) {
	out := make(map[uint64]bool, len(heights))
	if len(heights) == 0 {
		return out, nil
	}
	err := c.query(ctx, fmt.Sprintf("reading %s of chain %q at %d heights", tableIndexedHeights, chainID, len(heights)),
		tracedHeightsQuery{chainID, heights}, func(r driver.Rows) error {
			var n uint64
			var traced uint8
			if err := r.Scan(&n, &traced); err != nil {
				return err
			}
			out[n] = traced == 1
			return nil
		})
	return out, err
}

// AddressTraceQuery selects an address's internal transactions.
type AddressTraceQuery struct {
	Address  string // lower-case 0x address
	From, To uint64 // heights, inclusive
	Desc     bool   // newest first
	// All lists every inner frame of the address; otherwise only those
	// Etherscan lists (value moved, contracts created or destroyed).
	All    bool
	After  *TracePosition
	Limit  int
	Offset int
}

// AddressTracePositions lists the positions of an address's internal
// transactions (as caller, callee, created contract or beneficiary) from
// address_traces.
func (c *TraceReader) AddressTracePositions(ctx context.Context, chainID string, q AddressTraceQuery) ([]TracePosition, error) {
	var out []TracePosition
	err := c.query(ctx, fmt.Sprintf("reading %s of chain %q", tableAddressTraces, chainID), addressTracePositionsQuery{chainID, q},
		func(r driver.Rows) error {
			var p TracePosition
			err := r.Scan(&p.Block, &p.Tx, &p.Index)
			out = append(out, p)
			return err
		})
	return out, err
}

// TracesAt returns the canonical frames at the positions, ascending; a
// position without one is left out.
func (c *TraceReader) TracesAt(ctx context.Context, chainID string, ps []TracePosition) ([]chaindata.Trace, error) {
	if len(ps) == 0 {
		return nil, nil
	}
	return c.traces(ctx, fmt.Sprintf("reading %s of chain %q at %d positions", tableTraces, chainID, len(ps)),
		tracesAtQuery{chainID, ps})
}

// TraceRangeQuery selects the inner frames of a height range.
type TraceRangeQuery struct {
	From, To uint64
	Desc     bool
	All      bool // every inner frame, not only those Etherscan lists
	Limit    int
	Offset   int
}

// TracesInRange returns the canonical inner frames of a height range, in
// order (or newest first).
func (c *TraceReader) TracesInRange(ctx context.Context, chainID string, q TraceRangeQuery) ([]chaindata.Trace, error) {
	return c.traces(ctx, fmt.Sprintf("reading %s of chain %q in [%d, %d]", tableTraces, chainID, q.From, q.To),
		tracesInRangeQuery{chainID, q})
}

// txTracesQuery reads one transaction's frames.
type txTracesQuery struct {
	chainID string
	height  uint64
	txIndex uint32
}

func (q txTracesQuery) toSQL() (string, []any) {
	return newestCanonical(traceReadColumns, traceReadColumns, tableTraces,
			"chain_id = ? AND block_number = ? AND tx_index = ?", "trace_index") + " ORDER BY trace_index",
		[]any{q.chainID, q.height, q.txIndex}
}

// blockTracesQuery reads one height's frames.
type blockTracesQuery struct {
	chainID string
	height  uint64
}

func (q blockTracesQuery) toSQL() (string, []any) {
	key := "tx_index, trace_index"
	return newestCanonical(traceReadColumns, traceReadColumns, tableTraces, "chain_id = ? AND block_number = ?", key) + " ORDER BY " + key,
		[]any{q.chainID, q.height}
}

// tracedHeightsQuery reads the newest mark's traced flag of a few heights.
type tracedHeightsQuery struct {
	chainID string
	heights []uint64
}

func (q tracedHeightsQuery) toSQL() (string, []any) {
	args := []any{q.chainID}
	for _, h := range q.heights {
		args = append(args, h)
	}
	return "SELECT number, argMax(traced, version) FROM indexed_heights WHERE chain_id = ? AND number IN (" +
		placeholders(len(q.heights)) + ") GROUP BY number", args
}

// addressTracePositionsQuery lists an address's frame positions within a
// height range, newest first or oldest first, beyond a cursor, skipping
// offset rows. transfers is a key-free column: it is tested on the newest
// version, outside the subquery (a tombstone has transfers = 0).
type addressTracePositionsQuery struct {
	chainID string
	q       AddressTraceQuery
}

func (a addressTracePositionsQuery) toSQL() (string, []any) {
	q := a.q
	args := []any{a.chainID, q.Address, q.From, q.To}
	where := "chain_id = ? AND address = ? AND block_number BETWEEN ? AND ?"
	if q.After != nil {
		op := ">"
		if q.Desc {
			op = "<"
		}
		where += fmt.Sprintf(" AND (block_number %[1]s ? OR (block_number = ? AND (tx_index %[1]s ? OR (tx_index = ? AND trace_index %[1]s ?))))", op)
		args = append(args, q.After.Block, q.After.Block, q.After.Tx, q.After.Tx, q.After.Index)
	}
	key := "block_number, tx_index, trace_index"
	order := key
	if q.Desc {
		order = "block_number DESC, tx_index DESC, trace_index DESC"
	}
	sql := newestCanonical(key, key+", transfers", tableAddressTraces, where, key)
	if !q.All {
		sql += " AND transfers = 1"
	}
	sql += " ORDER BY " + order + " LIMIT ?"
	args = append(args, q.Limit)
	if q.Offset > 0 {
		sql += " OFFSET ?"
		args = append(args, q.Offset)
	}
	return sql, args
}

// tracesAtQuery reads the canonical frames at positions.
type tracesAtQuery struct {
	chainID   string
	positions []TracePosition
}

func (q tracesAtQuery) toSQL() (string, []any) {
	cond, args := keysIn("tx_index, trace_index", q.positions, func(p TracePosition) (uint64, []any) {
		return p.Block, []any{p.Tx, p.Index}
	})
	return newestCanonical(traceReadColumns, traceReadColumns, tableTraces, "chain_id = ? AND "+cond, "block_number, tx_index, trace_index") +
		" ORDER BY block_number, tx_index, trace_index", append([]any{q.chainID}, args...)
}

// tracesInRangeQuery reads the inner frames of a height range that pass
// the filter: FINAL, as logsQuery, since depth and type are not key
// columns.
type tracesInRangeQuery struct {
	chainID string
	q       TraceRangeQuery
}

func (t tracesInRangeQuery) toSQL() (string, []any) {
	q := t.q
	sql := "SELECT " + traceReadColumns + " FROM traces FINAL WHERE chain_id = ? AND block_number BETWEEN ? AND ? AND depth > 0"
	if !q.All {
		sql += " AND " + transfersSQL
	}
	order := "block_number, tx_index, trace_index"
	if q.Desc {
		order = "block_number DESC, tx_index DESC, trace_index DESC"
	}
	sql += " AND is_canonical = 1 ORDER BY " + order + " LIMIT ?"
	args := []any{t.chainID, q.From, q.To, q.Limit}
	if q.Offset > 0 {
		sql += " OFFSET ?"
		args = append(args, q.Offset)
	}
	return sql, args
}
