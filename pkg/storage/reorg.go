package storage

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/tideline-dev/tideline/pkg/chain"
)

// Reorganisations. Rows are never deleted (no mutations): a row of a block
// that left the chain is superseded by a row with the same key, a newer
// version and is_canonical = 0 (a tombstone), or by the canonical block's
// row at the same key. Readers take the newest row per key (FINAL or
// argMax(…, version)) and keep is_canonical = 1.

// Column lists of rewrites: the insert columns plus is_canonical, so that
// canonical rows and tombstones of one table go in one batch (one part),
// and a rewrite never leaves a table half done.
var (
	blockRewriteColumns       = withCanonical(blockColumns)
	transactionRewriteColumns = withCanonical(transactionColumns)
	logRewriteColumns         = withCanonical(logColumns)
)

func withCanonical(cols []string) []string {
	return append(slices.Clone(cols), "is_canonical")
}

const (
	canonical uint8 = 1
	tombstone uint8 = 0
)

// storedBlocksQuery reads, per height, the newest block row: argMax over
// version is exact whether or not the parts have merged.
type storedBlocksQuery struct {
	chainID  string
	from, to uint64
}

func (q storedBlocksQuery) toSQL() (string, []any) {
	return "SELECT number, argMax(hash, version), argMax(parent_hash, version), argMax(is_canonical, version)" +
			" FROM blocks WHERE chain_id = ? AND number BETWEEN ? AND ? GROUP BY number ORDER BY number",
		[]any{q.chainID, q.from, q.to}
}

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

// StoredBlocks returns the newest block row of every height in [from, to]
// that has one, ascending: hash, parent hash and whether it is canonical.
// It is what the indexer compares with the node near the head.
func (c *ClickHouse) StoredBlocks(ctx context.Context, chainID string, from, to uint64) ([]chain.StoredBlock, error) {
	ctx, cancel := c.queryContext(ctx)
	defer cancel()
	query, args := storedBlocksQuery{chainID, from, to}.toSQL()
	fail := func(err error) error {
		return fmt.Errorf("storage: reading %s for chain %q in [%d, %d]: %w", tableBlocks, chainID, from, to, err)
	}
	rows, err := c.conn.Query(ctx, query, args...)
	if err != nil {
		return nil, fail(err)
	}
	defer rows.Close()
	var out []chain.StoredBlock
	for rows.Next() {
		var (
			b     chain.StoredBlock
			canon uint8
		)
		if err := rows.Scan(&b.Number, &b.Hash, &b.ParentHash, &canon); err != nil {
			return nil, fail(err)
		}
		b.Canonical = canon == canonical
		out = append(out, b)
	}
	if err := rows.Err(); err != nil {
		return nil, fail(err)
	}
	return out, nil
}

// stalePositions reads what is stored canonical at the heights in ranges
// (canonicalPositionsQuery): blocks, transaction and log positions, with
// what their look-up rows are keyed by. It asks for the span of the ranges
// (one query with bound arguments however scattered the heights); rows of
// heights between the ranges are dropped here.
func (c *ClickHouse) stalePositions(ctx context.Context, chainID string, ranges []chain.HeightRange) (map[uint64]storedPositions, error) {
	span := chain.Span(ranges)
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
func inRanges(rs []chain.HeightRange, h uint64) bool {
	i, _ := slices.BinarySearchFunc(rs, h, func(r chain.HeightRange, h uint64) int {
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

// RemoveBlock supersedes every canonical row of a height with a tombstone:
// for a height the node no longer has (the chain got shorter). The block,
// its transactions and logs, and every look-up row pointing at them get
// one, in the order of WriteBlocks (look-ups first), so a crash part-way
// is finished by calling it again. The indexed_heights mark stays, so the
// scheduler does not index the height again by itself; the indexer's check
// near the head sees the tombstone and rewrites the height once the node
// has a block there.
func (c *ClickHouse) RemoveBlock(ctx context.Context, chainID string, height uint64) error {
	if chainID == "" {
		return errors.New("storage: RemoveBlock: empty chain id")
	}
	where := heightsText([]uint64{height})
	stale, err := c.stalePositions(ctx, chainID, []chain.HeightRange{{From: height, To: height}})
	if err != nil {
		return fmt.Errorf("storage: reading stored positions for chain %q %s: %w", chainID, where, err)
	}
	return c.insertRows(ctx, chainID, where, removalRows(chainID, height, stale[height], c.clock.next()))
}

// removalRows are the tombstones of everything stored canonical at one
// height (p): the block row, every transaction and log position, and every
// look-up key of them.
func removalRows(chainID string, height uint64, p storedPositions, version uint64) *rowSet {
	r := &rowSet{}
	r.txs.grow(len(p.txs))
	r.logs.grow(len(p.logs))
	r.lookups.grow(1, len(p.txs), len(p.logs))
	r.addTombstones(chainID, height, p, sortedPositions(p.txs), sortedPositions(p.logs), version)
	r.lookups.addTombstones(chainID, height, p, nil, version)
	if p.block != nil {
		// The tombstone keeps the removed block's hashes, for operators.
		r.blocks.grow(1)
		r.blocks.add(chainID, &chain.Block{Number: height, Hash: p.block.hash, ParentHash: p.block.parentHash}, version, tombstone)
	}
	r.lookups.sort()
	return r
}
