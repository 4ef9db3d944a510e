package storage

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Retention: deleting a chain's detailed rows at or below a height.
//
// Every data table is PARTITION BY intDiv(<height>, 1000000), and a
// partition holds the rows of every chain at those heights. So a
// partition is dropped (ALTER TABLE … DROP PARTITION, instant, no rewrite)
// only when it lies wholly at or below the height and holds no other
// chain's rows; every other row goes by a mutation, ALTER TABLE … DELETE
// WHERE chain_id = ? AND <height> <= ?, which 18.16 and modern servers
// both run in the background (the same statement as DeleteChainRows).
// On a replicated table (clickhouse.cluster) both reach every replica
// through the replication log: they are sent to one host, without
// ON CLUSTER.
//
// What is kept: aggregates (cumulative counts, so statistics of pruned
// ranges stay answerable), chain_state, and the marks of indexed_heights
// and indexed_chunks. A mark of a pruned height still says "this height
// was indexed": whatever would index it again (a retried or duplicate
// activity, a scan started from the start height) finds it indexed and
// writes nothing, so a pruned height is never fetched again; and
// indexed_chunks stays derived from marks that are never deleted.

// PruneTable is a table retention deletes from, with its height column.
type PruneTable struct {
	Name   string
	Height string
}

// PruneTables are the tables whose rows at or below the pruned height
// retention deletes: the detailed rows and the look-up tables that point
// at them.
var PruneTables = []PruneTable{
	{tableBlocks, "number"},
	{tableTransactions, "block_number"},
	{tableLogs, "block_number"},
	{tableTxByHash, "block_number"},
	{tableBlockByHash, "number"},
	{tableBlockByTime, "number"},
	{tableAddressTxs, "block_number"},
	{tableAddressLogs, "block_number"},
	{tableTopicHeights, "block_number"},
	{tableTokenTransfers, "block_number"},
	{tableTransfersByTok, "block_number"},
	{tableAddressTransfer, "block_number"},
	{tableTraces, "block_number"},
	{tableAddressTraces, "block_number"},
}

// KeptTables are the tables with chain rows that retention leaves whole
// (see above). Every table with a chain_id column is in exactly one of
// PruneTables and KeptTables (TestPruneTablesCoverTheSchema), so a table
// added later is decided on, not forgotten. The change stream's log
// (stream_events) is kept whole: consumers resume from any seq, and its
// rows are keyed by seq, not height; webhook subscriptions are settings.
var KeptTables = []string{tableIndexedHeights, tableIndexedChunks, tableAggregates, tableChainState, tableTokenMetadata,
	tableStreamEvents, tableSubscriptions}

// PruneResult says what one PruneRows call did.
type PruneResult struct {
	// Dropped lists "table/partition" for every partition dropped.
	Dropped []string
	// Mutated lists the tables a DELETE mutation was started on.
	Mutated []string
	// Reindex lists the other chains whose marks in a dropped partition
	// were deleted (see PruneRows); normally empty.
	Reindex []string
}

// RowsAtOrBelow counts, per table of PruneTables, the chain's stored rows
// at or below height (every version, tombstones too: what a deletion must
// remove). The primary key (chain_id, height, …) keeps each count to the
// chain's range.
func (c *Retention) RowsAtOrBelow(ctx context.Context, chainID string, height uint64) (map[string]uint64, error) {
	out := map[string]uint64{}
	for _, t := range PruneTables {
		var n uint64
		if err := c.queryRow(ctx, rowsAtOrBelowQuery{t, chainID, height}, &n); err != nil {
			return nil, fmt.Errorf("storage: counting rows of chain %q at or below %d in %s: %w", chainID, height, t.Name, err)
		}
		out[t.Name] = n
	}
	return out, nil
}

// PruneRows deletes the chain's rows at or below height from every table
// of PruneTables that still has some: it drops each partition of the table
// that lies wholly at or below height and holds no row of another chain
// (in the table or in indexed_heights), then starts a DELETE mutation for
// what is left, if anything. Mutations run in the background
// (PendingMutations says when they are done); the caller should not start
// more while some are pending.
//
// Another chain could write its first rows into a partition between the
// check and the drop (a chain catching up exactly there, within
// milliseconds). Its rows would be gone while its marks, written after
// them, stay; so after dropping, the partition's marks are looked at
// again, and another chain's marks found there are deleted (with its
// indexed_chunks records of that range): its scans then index those
// heights again. The chains are listed in Reindex.
func (c *Retention) PruneRows(ctx context.Context, chainID string, height uint64) (PruneResult, error) {
	var res PruneResult
	if chainID == "" {
		return res, errors.New("storage: PruneRows: empty chain id")
	}
	dropped := map[uint64]bool{}
	for _, t := range PruneTables {
		left, err := c.anyAtOrBelow(ctx, t, chainID, height)
		if err != nil {
			return res, err
		}
		if !left {
			continue
		}
		parts, err := c.partitions(ctx, t.Name)
		if err != nil {
			return res, fmt.Errorf("storage: listing the partitions of %s: %w", t.Name, err)
		}
		for _, p := range parts {
			lo, hi := satMul(p, partitionHeights), satAdd(satMul(p, partitionHeights), partitionHeights-1)
			if hi > height {
				break // ascending: the rest is not wholly at or below
			}
			alone, err := c.partitionOfChainAlone(ctx, t, chainID, lo, hi)
			if err != nil {
				return res, err
			}
			if !alone {
				continue
			}
			if err := c.execSQL(ctx, dropPartitionStmt(t.Name, p)); err != nil {
				return res, fmt.Errorf("storage: dropping partition %d of %s (heights %d-%d of chain %q): %w", p, t.Name, lo, hi, chainID, err)
			}
			dropped[p] = true
			res.Dropped = append(res.Dropped, fmt.Sprintf("%s/%d", t.Name, p))
		}
		if left, err = c.anyAtOrBelow(ctx, t, chainID, height); err != nil || !left {
			if err != nil {
				return res, err
			}
			continue
		}
		stmt := deleteRowsStmt{t.Name, "chain_id = ? AND " + t.Height + " <= ?", []any{chainID, height}}
		if err := c.mutate(ctx, stmt); err != nil {
			return res, fmt.Errorf("storage: deleting the rows of chain %q at or below %d from %s: %w", chainID, height, t.Name, err)
		}
		res.Mutated = append(res.Mutated, t.Name)
	}
	ps := make([]uint64, 0, len(dropped))
	for p := range dropped {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	for _, p := range ps {
		others, err := c.reindexOthers(ctx, chainID, p)
		if err != nil {
			return res, err
		}
		res.Reindex = append(res.Reindex, others...)
	}
	return res, nil
}

// anyAtOrBelow tells whether the chain has a row at or below height in t:
// the first one found answers, so a table with billions of the chain's
// rows to delete is not counted.
func (c *db) anyAtOrBelow(ctx context.Context, t PruneTable, chainID string, height uint64) (bool, error) {
	var n uint64
	if err := c.queryRow(ctx, anyAtOrBelowQuery{t, chainID, height}, &n); err != nil {
		return false, fmt.Errorf("storage: looking for rows of chain %q at or below %d in %s: %w", chainID, height, t.Name, err)
	}
	return n > 0, nil
}

// partitionOfChainAlone tells whether no chain but chainID has rows at
// heights [lo, hi] in t or in indexed_heights. The condition on chain_id
// is a range of the primary key's first column, so the chain's own
// granules are skipped, not read.
func (c *db) partitionOfChainAlone(ctx context.Context, t PruneTable, chainID string, lo, hi uint64) (bool, error) {
	for _, table := range []PruneTable{t, {tableIndexedHeights, "number"}} {
		var n uint64
		if err := c.queryRow(ctx, otherChainsQuery{table, chainID, lo, hi}, &n); err != nil {
			return false, fmt.Errorf("storage: looking for other chains' rows at heights %d-%d of %s: %w", lo, hi, table.Name, err)
		}
		if n > 0 {
			return false, nil
		}
	}
	return true, nil
}

// reindexOthers deletes the marks and chunk records of every other chain
// found in partition p of indexed_heights after its detailed rows were
// dropped, so that their scans index those heights again; it returns
// those chains.
func (c *db) reindexOthers(ctx context.Context, chainID string, p uint64) ([]string, error) {
	lo, hi := satMul(p, partitionHeights), satAdd(satMul(p, partitionHeights), partitionHeights-1)
	ctx2, cancel := c.queryContext(ctx)
	defer cancel()
	query, args := otherChainIDsQuery{chainID, lo, hi}.toSQL()
	rows, err := c.conn.Query(ctx2, query, args...)
	if err != nil {
		return nil, fmt.Errorf("storage: looking for other chains' marks at heights %d-%d: %w", lo, hi, err)
	}
	var others []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, fmt.Errorf("storage: looking for other chains' marks at heights %d-%d: %w", lo, hi, err)
		}
		others = append(others, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("storage: looking for other chains' marks at heights %d-%d: %w", lo, hi, err)
	}
	for _, id := range others {
		for _, s := range []deleteRowsStmt{
			{tableIndexedHeights, "chain_id = ? AND number BETWEEN ? AND ?", []any{id, lo, hi}},
			{tableIndexedChunks, "chain_id = ? AND first BETWEEN ? AND ?", []any{id, lo, hi}},
		} {
			if err := c.mutate(ctx, s); err != nil {
				return nil, fmt.Errorf("storage: deleting the marks of chain %q at heights %d-%d from %s: %w", id, lo, hi, s.table, err)
			}
		}
	}
	return others, nil
}

// HighestBlockBefore returns the highest height in [from, to] whose block
// is older than cutoff (by its timestamp); found is false when none is.
// It reads the timestamps of the range (no index on time in blocks): the
// range is what retention keeps, read once per run.
func (c *Retention) HighestBlockBefore(ctx context.Context, chainID string, from, to uint64, cutoff time.Time) (uint64, bool, error) {
	if cutoff.Unix() <= 0 {
		return 0, false, nil
	}
	var top, n uint64
	if err := c.queryRow(ctx, blockBeforeQuery{chainID, from, to, uint32(min(cutoff.Unix(), 1<<32-1))}, &top, &n); err != nil {
		return 0, false, fmt.Errorf("storage: reading the heights of chain %q in [%d, %d] older than %s: %w", chainID, from, to, cutoff.UTC().Format(time.RFC3339), err)
	}
	return top, n > 0, nil
}

// rowsAtOrBelowQuery counts a chain's rows of a table at or below a height.
type rowsAtOrBelowQuery struct {
	t       PruneTable
	chainID string
	height  uint64
}

func (q rowsAtOrBelowQuery) toSQL() (string, []any) {
	return "SELECT count() FROM " + q.t.Name + " WHERE chain_id = ? AND " + q.t.Height + " <= ?", []any{q.chainID, q.height}
}

// anyAtOrBelowQuery is 1 when a chain has a row of a table at or below a
// height, else 0.
type anyAtOrBelowQuery struct {
	t       PruneTable
	chainID string
	height  uint64
}

func (q anyAtOrBelowQuery) toSQL() (string, []any) {
	return "SELECT count() FROM (SELECT 1 FROM " + q.t.Name + " WHERE chain_id = ? AND " + q.t.Height + " <= ? LIMIT 1)",
		[]any{q.chainID, q.height}
}

// otherChainsQuery tells whether any chain but one has a row at heights
// [lo, hi] of a table.
type otherChainsQuery struct {
	t       PruneTable
	chainID string
	lo, hi  uint64
}

func (q otherChainsQuery) toSQL() (string, []any) {
	return "SELECT count() FROM (SELECT 1 FROM " + q.t.Name + " WHERE (chain_id < ? OR chain_id > ?) AND " +
			q.t.Height + " BETWEEN ? AND ? LIMIT 1)",
		[]any{q.chainID, q.chainID, q.lo, q.hi}
}

// otherChainIDsQuery lists the chains but one with marks at [lo, hi].
type otherChainIDsQuery struct {
	chainID string
	lo, hi  uint64
}

func (q otherChainIDsQuery) toSQL() (string, []any) {
	return "SELECT DISTINCT chain_id FROM indexed_heights WHERE (chain_id < ? OR chain_id > ?) AND number BETWEEN ? AND ? ORDER BY chain_id",
		[]any{q.chainID, q.chainID, q.lo, q.hi}
}

// dropPartitionStmt drops one partition of a table; the partition is the
// value of intDiv(height, 1000000), written as a number (both 18.16 and
// modern servers take the partition expression's value).
func dropPartitionStmt(table string, p uint64) string {
	return fmt.Sprintf("ALTER TABLE %s DROP PARTITION %d", table, p)
}

// blockBeforeQuery is the highest height of a range whose block time is
// before a cutoff (unix seconds), and how many are.
type blockBeforeQuery struct {
	chainID  string
	from, to uint64
	cutoff   uint32
}

func (q blockBeforeQuery) toSQL() (string, []any) {
	return "SELECT max(number), count() FROM blocks WHERE chain_id = ? AND number BETWEEN ? AND ? AND timestamp < toDateTime(?)",
		[]any{q.chainID, q.from, q.to, q.cutoff}
}
