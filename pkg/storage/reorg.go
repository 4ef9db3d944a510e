package storage

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/tideline-dev/tideline/pkg/chaindata"
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

// StoredBlocks returns the newest block row of every height in [from, to]
// that has one, ascending: hash, parent hash and whether it is canonical.
// It is what the indexer compares with the node near the head.
func (c *ClickHouse) StoredBlocks(ctx context.Context, chainID string, from, to uint64) ([]chaindata.StoredBlock, error) {
	return c.storedBlocks(ctx, chainID, from, to)
}

// storedBlocks is StoredBlocks for every view that needs it (the traces
// backfill's targets too).
func (c *db) storedBlocks(ctx context.Context, chainID string, from, to uint64) ([]chaindata.StoredBlock, error) {
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
	var out []chaindata.StoredBlock
	for rows.Next() {
		var (
			b     chaindata.StoredBlock
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

// RemoveBlock supersedes every canonical row of a height with a tombstone:
// for a height the node no longer has (the chain got shorter). The block,
// its transactions, logs and traces, and every look-up row pointing at
// them get one, in the order of WriteBlocks (look-ups first), so a crash part-way
// is finished by calling it again. The indexed_heights mark stays, so the
// scheduler does not index the height again by itself; the indexer's check
// near the head sees the tombstone and rewrites the height once the node
// has a block there.
func (c *ClickHouse) RemoveBlock(ctx context.Context, chainID string, height uint64) error {
	if chainID == "" {
		return errors.New("storage: RemoveBlock: empty chain id")
	}
	where := heightsText([]uint64{height})
	span := []chaindata.HeightRange{{From: height, To: height}}
	stale, err := c.stalePositions(ctx, chainID, span)
	if err != nil {
		return fmt.Errorf("storage: reading stored positions for chain %q %s: %w", chainID, where, err)
	}
	version := c.clock.next()
	r := removalRows(chainID, height, stale[height], version)
	if !c.cfg.SkipTokenTransfers {
		old, err := c.storedTransfers(ctx, chainID, span)
		if err != nil {
			return fmt.Errorf("storage: reading stored token transfers for chain %q %s: %w", chainID, where, err)
		}
		r.transfers = removalTransfers(chainID, height, old[height], version)
	}
	if err := c.addTraces(ctx, chainID, where, span, nil, r, version); err != nil {
		return err
	}
	return c.insertRows(ctx, chainID, where, r)
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
		r.blocks.add(chainID, &chaindata.Block{Number: height, Hash: p.block.hash, ParentHash: p.block.parentHash}, version, tombstone)
	}
	r.lookups.sort()
	return r
}
