package storage

import (
	"context"

	"github.com/tideline-dev/tideline/pkg/chaindata"
)

// storedTracesQuery lists the frame positions stored canonical in [from,
// to], with what a rewrite of their heights must know to supersede them
// (traces_rows.go): the block each belongs to, the caller and callee, the
// type and the depth. Like canonicalPositionsQuery
// it reads nothing on a range never written, the common case.
type storedTracesQuery struct {
	chainID  string
	from, to uint64
}

func (q storedTracesQuery) toSQL() (string, []any) {
	return "SELECT block_number, tx_index, trace_index, argMax(block_hash, version)," +
			" argMax(from_address, version), argMax(to_address, version), argMax(type, version), argMax(depth, version)" +
			" FROM traces WHERE chain_id = ? AND block_number BETWEEN ? AND ?" +
			" GROUP BY block_number, tx_index, trace_index HAVING argMax(is_canonical, version) = 1",
		[]any{q.chainID, q.from, q.to}
}

// storedTraces reads the frames stored canonical at the heights in ranges,
// by height (one query over the ranges' span; heights between them are
// dropped).
func (c *db) storedTraces(ctx context.Context, chainID string, ranges []chaindata.HeightRange) (map[uint64]map[framePos]storedFrame, error) {
	span := chaindata.Span(ranges)
	ctx, cancel := c.queryContext(ctx)
	defer cancel()
	query, args := storedTracesQuery{chainID, span.From, span.To}.toSQL()
	rows, err := c.conn.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[uint64]map[framePos]storedFrame{}
	for rows.Next() {
		var (
			height uint64
			p      framePos
			f      storedFrame
			typ    string
		)
		if err := rows.Scan(&height, &p.tx, &p.index, &f.blockHash, &f.from, &f.to, &typ, &f.depth); err != nil {
			return nil, err
		}
		if len(ranges) > 1 && !inRanges(ranges, height) {
			continue
		}
		f.typ = chaindata.TraceType(typ)
		if out[height] == nil {
			out[height] = map[framePos]storedFrame{}
		}
		out[height][p] = f
	}
	return out, rows.Err()
}
