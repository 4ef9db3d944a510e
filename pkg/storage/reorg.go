package storage

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

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

// canonicalPositionsQuery lists the positions (tx_index or log_index) of
// one height whose newest row is canonical, with that row's block hash: the
// rows a rewrite must replace or supersede.
type canonicalPositionsQuery struct {
	table, column string
	chainID       string
	height        uint64
}

func (q canonicalPositionsQuery) toSQL() (string, []any) {
	return fmt.Sprintf("SELECT %s, argMax(block_hash, version) FROM %s WHERE chain_id = ? AND block_number = ?"+
			" GROUP BY %s HAVING argMax(is_canonical, version) = 1 ORDER BY %s", q.column, q.table, q.column, q.column),
		[]any{q.chainID, q.height}
}

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

// canonicalPositions returns position → block hash of one height's rows
// in table whose newest version is canonical.
func (c *ClickHouse) canonicalPositions(ctx context.Context, table, column, chainID string, height uint64) (map[uint32]string, error) {
	ctx, cancel := c.queryContext(ctx)
	defer cancel()
	query, args := canonicalPositionsQuery{table, column, chainID, height}.toSQL()
	rows, err := c.conn.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[uint32]string{}
	for rows.Next() {
		var (
			pos  uint32
			hash string
		)
		if err := rows.Scan(&pos, &hash); err != nil {
			return nil, err
		}
		out[pos] = hash
	}
	return out, rows.Err()
}

// stalePositions reads the canonical positions of a height for both
// transactions and logs.
func (c *ClickHouse) stalePositions(ctx context.Context, chainID string, height uint64) (txs, logs map[uint32]string, err error) {
	if txs, err = c.canonicalPositions(ctx, tableTransactions, "tx_index", chainID, height); err != nil {
		return nil, nil, fmt.Errorf("storage: reading %s positions for chain %q height %d: %w", tableTransactions, chainID, height, err)
	}
	if logs, err = c.canonicalPositions(ctx, tableLogs, "log_index", chainID, height); err != nil {
		return nil, nil, fmt.Errorf("storage: reading %s positions for chain %q height %d: %w", tableLogs, chainID, height, err)
	}
	return txs, logs, nil
}

// RewriteBlock writes a height that may already hold another block (after
// a reorganisation): like WriteBlock, and in addition every transaction or
// log position of the height that is canonical now but absent from data
// gets a tombstone, so a block with fewer transactions or logs than the one
// it replaces leaves exactly its own rows visible.
//
// Order: transactions, logs (canonical rows and tombstones in one batch
// each), then the block row, then the mark. The block row goes last because
// it is what the indexer compares with the node: until it is written the
// height still looks orphaned, so a crash part-way is repaired by the next
// check instead of being mistaken for done.
//
// Two rewrites of one height with different blocks at the same moment may
// each miss the other's positions; the block row of the newer one wins and
// the next check near the head rewrites the height again if needed.
func (c *ClickHouse) RewriteBlock(ctx context.Context, chainID string, data *chain.BlockData) error {
	if chainID == "" {
		return errors.New("storage: RewriteBlock: empty chain id")
	}
	if data == nil {
		return fmt.Errorf("storage: RewriteBlock chain %q: nil block data", chainID)
	}
	b := &data.Block
	if err := checkBlockData(data); err != nil {
		return fmt.Errorf("storage: RewriteBlock chain %q height %d: %w", chainID, b.Number, err)
	}
	staleTxs, staleLogs, err := c.stalePositions(ctx, chainID, b.Number)
	if err != nil {
		return err
	}
	version := c.clock.next()

	var rows [][]any
	for i := range data.Transactions {
		t := &data.Transactions[i]
		rows = append(rows, append(txRow(chainID, t, version), canonical))
		delete(staleTxs, t.Index)
	}
	rows = append(rows, txTombstones(chainID, b.Number, staleTxs, version)...)
	if len(rows) > 0 {
		if err := c.insert(ctx, insertStmt{tableTransactions, transactionRewriteColumns}, rows); err != nil {
			return writeErr(tableTransactions, chainID, b.Number, err)
		}
	}

	rows = rows[:0]
	for i := range data.Logs {
		l := &data.Logs[i]
		rows = append(rows, append(logRow(chainID, l, version), canonical))
		delete(staleLogs, l.LogIndex)
	}
	rows = append(rows, logTombstones(chainID, b.Number, staleLogs, version)...)
	if len(rows) > 0 {
		if err := c.insert(ctx, insertStmt{tableLogs, logRewriteColumns}, rows); err != nil {
			return writeErr(tableLogs, chainID, b.Number, err)
		}
	}

	rows = [][]any{append(blockRow(chainID, b, version), canonical)}
	if err := c.insert(ctx, insertStmt{tableBlocks, blockRewriteColumns}, rows); err != nil {
		return writeErr(tableBlocks, chainID, b.Number, err)
	}
	rows = [][]any{{chainID, b.Number, b.Hash, time.Now().UTC().Truncate(time.Second), version}}
	if err := c.insert(ctx, insertStmt{tableIndexedHeights, indexedHeightColumns}, rows); err != nil {
		return writeErr(tableIndexedHeights, chainID, b.Number, err)
	}
	return nil
}

// RemoveBlock supersedes every canonical row of a height with a tombstone:
// for a height the node no longer has (the chain got shorter). The
// indexed_heights mark stays, so the scheduler does not index the height
// again by itself; the indexer's check near the head sees the tombstone
// and rewrites the height once the node has a block there.
func (c *ClickHouse) RemoveBlock(ctx context.Context, chainID string, height uint64) error {
	if chainID == "" {
		return errors.New("storage: RemoveBlock: empty chain id")
	}
	stored, err := c.StoredBlocks(ctx, chainID, height, height)
	if err != nil {
		return err
	}
	staleTxs, staleLogs, err := c.stalePositions(ctx, chainID, height)
	if err != nil {
		return err
	}
	version := c.clock.next()
	if rows := txTombstones(chainID, height, staleTxs, version); len(rows) > 0 {
		if err := c.insert(ctx, insertStmt{tableTransactions, transactionRewriteColumns}, rows); err != nil {
			return writeErr(tableTransactions, chainID, height, err)
		}
	}
	if rows := logTombstones(chainID, height, staleLogs, version); len(rows) > 0 {
		if err := c.insert(ctx, insertStmt{tableLogs, logRewriteColumns}, rows); err != nil {
			return writeErr(tableLogs, chainID, height, err)
		}
	}
	if len(stored) == 1 && stored[0].Canonical {
		// The tombstone keeps the removed block's hashes, for operators.
		b := chain.Block{Number: height, Hash: stored[0].Hash, ParentHash: stored[0].ParentHash}
		rows := [][]any{append(blockRow(chainID, &b, version), tombstone)}
		if err := c.insert(ctx, insertStmt{tableBlocks, blockRewriteColumns}, rows); err != nil {
			return writeErr(tableBlocks, chainID, height, err)
		}
	}
	return nil
}

// txTombstones and logTombstones build one tombstone per position, in
// position order: the key, the superseded row's block hash, zero values
// elsewhere and is_canonical = 0.
func txTombstones(chainID string, height uint64, positions map[uint32]string, version uint64) [][]any {
	var rows [][]any
	for _, pos := range sortedPositions(positions) {
		t := chain.Transaction{BlockNumber: height, BlockHash: positions[pos], Index: pos}
		rows = append(rows, append(txRow(chainID, &t, version), tombstone))
	}
	return rows
}

func logTombstones(chainID string, height uint64, positions map[uint32]string, version uint64) [][]any {
	var rows [][]any
	for _, pos := range sortedPositions(positions) {
		l := chain.Log{BlockNumber: height, BlockHash: positions[pos], LogIndex: pos}
		rows = append(rows, append(logRow(chainID, &l, version), tombstone))
	}
	return rows
}

func sortedPositions(m map[uint32]string) []uint32 {
	out := make([]uint32, 0, len(m))
	for p := range m {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}
