package storage

import (
	"context"
	"slices"

	"github.com/tideline-dev/tideline/pkg/chaindata"
)

// What a write supersedes. Every WriteBlocks (and RemoveBlock) first reads
// what is stored canonical at its heights: each stored position and look-up
// key that the new blocks lack gets a tombstone in the same inserts
// (rows.go builds them). On a fresh range the primary key excludes every
// granule and the read costs nothing (BenchmarkStalePositions).

// canonicalPositionsQuery lists what is stored in [from, to] with a
// canonical newest row: transaction positions (kind 0) with the row's
// block hash, hash, sender, recipient and created contract; log positions
// (kind 1) with the block hash and the emitting address; blocks (kind 2)
// with hash, parent hash and time. That is every key a write of those
// heights must replace or supersede: the positions in the main tables and
// the hashes, addresses and times in the look-up tables. One round trip for
// the whole call; the three parts share one row shape (kind, height,
// position, block hash, four strings, time), with empty strings and 0
// where a kind has nothing. On a range nothing has been written to yet
// (the common case: the backlog, a new live height), the primary key
// (chain_id, height, …) excludes every granule and the query reads no rows.
type canonicalPositionsQuery struct {
	chainID  string
	from, to uint64
}

func (q canonicalPositionsQuery) toSQL() (string, []any) {
	return "SELECT 0, block_number, tx_index, argMax(block_hash, version), argMax(hash, version)," +
			" argMax(from_address, version), argMax(to_address, version), argMax(contract_address, version), toUInt32(0)" +
			" FROM transactions WHERE chain_id = ? AND block_number BETWEEN ? AND ?" +
			" GROUP BY block_number, tx_index HAVING argMax(is_canonical, version) = 1" +
			" UNION ALL" +
			" SELECT 1, block_number, log_index, argMax(block_hash, version), argMax(address, version), '', '', '', toUInt32(0)" +
			" FROM logs WHERE chain_id = ? AND block_number BETWEEN ? AND ?" +
			" GROUP BY block_number, log_index HAVING argMax(is_canonical, version) = 1" +
			" UNION ALL" +
			" SELECT 2, number, toUInt32(0), argMax(hash, version), argMax(parent_hash, version), '', '', ''," +
			" toUInt32(argMax(timestamp, version))" +
			" FROM blocks WHERE chain_id = ? AND number BETWEEN ? AND ?" +
			" GROUP BY number HAVING argMax(is_canonical, version) = 1",
		[]any{q.chainID, q.from, q.to, q.chainID, q.from, q.to, q.chainID, q.from, q.to}
}

// Kinds of canonicalPositionsQuery's rows.
const (
	storedKindTx    uint8 = 0
	storedKindLog   uint8 = 1
	storedKindBlock uint8 = 2
)

// stalePositions reads what is stored canonical at the heights in ranges
// (canonicalPositionsQuery): blocks, transaction and log positions, with
// what their look-up rows are keyed by. It asks for the span of the ranges
// (one query with bound arguments however scattered the heights); rows of
// heights between the ranges are dropped here.
func (c *db) stalePositions(ctx context.Context, chainID string, ranges []chaindata.HeightRange) (map[uint64]storedPositions, error) {
	span := chaindata.Span(ranges)
	ctx, cancel := c.queryContext(ctx)
	defer cancel()
	query, args := canonicalPositionsQuery{chainID, span.From, span.To}.toSQL()
	rows, err := c.conn.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[uint64]storedPositions{}
	for rows.Next() {
		var (
			kind                      uint8
			height                    uint64
			pos, ts                   uint32
			blockHash, s1, s2, s3, s4 string
		)
		if err := rows.Scan(&kind, &height, &pos, &blockHash, &s1, &s2, &s3, &s4, &ts); err != nil {
			return nil, err
		}
		if len(ranges) > 1 && !inRanges(ranges, height) {
			continue
		}
		p, ok := out[height]
		if !ok {
			p = storedPositions{txs: map[uint32]storedTx{}, logs: map[uint32]storedLog{}}
		}
		switch kind {
		case storedKindTx:
			p.txs[pos] = storedTx{blockHash: blockHash, hash: s1, from: s2, to: s3, contract: s4}
		case storedKindLog:
			p.logs[pos] = storedLog{blockHash: blockHash, address: s1}
		case storedKindBlock:
			p.block = &storedBlock{hash: blockHash, parentHash: s1, timestamp: ts}
		}
		out[height] = p
	}
	return out, rows.Err()
}

// inRanges reports whether h is in one of the ascending, disjoint ranges.
func inRanges(rs []chaindata.HeightRange, h uint64) bool {
	i, _ := slices.BinarySearchFunc(rs, h, func(r chaindata.HeightRange, h uint64) int {
		switch {
		case r.To < h:
			return -1
		case r.From > h:
			return 1
		}
		return 0
	})
	return i < len(rs) && rs[i].Contains(h)
}
