package storage

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// The chain registry (migration create_chain_registry): chain definitions
// stored at runtime, read by every worker. What a definition means is
// pkg/registry's business; here it is an opaque JSON string.

// tableChainRegistry holds one logical row per chain defined at runtime.
const tableChainRegistry = "chain_registry"

var chainRegistryColumns = []string{"chain_id", "state", "definition", "drop_data", "updated_at", "version"}

// ChainRecord is the newest row of one chain in the registry.
type ChainRecord struct {
	ChainID    string
	State      string // active, paused or removed (pkg/registry)
	Definition string // the settings as JSON
	// DropData is set on a removal that deletes the chain's rows.
	DropData  bool
	UpdatedAt time.Time
	Version   uint64
}

// SaveChainRecord writes a new row for rec.ChainID and returns it as
// stored. Its version is above every stored row of the chain (and the
// process's clock), so it is the newest even when the host that wrote the
// last one ran ahead in time.
func (c *Records) SaveChainRecord(ctx context.Context, rec ChainRecord) (ChainRecord, error) {
	if rec.ChainID == "" || rec.State == "" {
		return rec, fmt.Errorf("storage: SaveChainRecord: empty chain id (%q) or state (%q)", rec.ChainID, rec.State)
	}
	var top uint64
	if err := c.queryRow(ctx, chainRecordVersionQuery{rec.ChainID}, &top); err != nil {
		return rec, fmt.Errorf("storage: reading %s for chain %q: %w", tableChainRegistry, rec.ChainID, err)
	}
	rec.Version = max(c.clock.next(), top+1)
	rec.UpdatedAt = time.Now().UTC().Truncate(time.Second)
	var drop uint8
	if rec.DropData {
		drop = 1
	}
	row := []any{rec.ChainID, rec.State, rec.Definition, drop, rec.UpdatedAt, rec.Version}
	if err := c.insert(ctx, insertStmt{tableChainRegistry, chainRegistryColumns}, [][]any{row}); err != nil {
		return rec, fmt.Errorf("storage: writing %s for chain %q: %w", tableChainRegistry, rec.ChainID, err)
	}
	return rec, nil
}

// ChainRecords returns the newest row of every chain ever registered
// (removed ones too), by chain ID.
func (c *RecordReader) ChainRecords(ctx context.Context) ([]ChainRecord, error) {
	ctx, cancel := c.queryContext(ctx)
	defer cancel()
	query, args := chainRecordsQuery{}.toSQL()
	rows, err := c.conn.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("storage: reading %s: %w", tableChainRegistry, err)
	}
	defer rows.Close()
	var out []ChainRecord
	for rows.Next() {
		var (
			r    ChainRecord
			drop uint8
		)
		if err := rows.Scan(&r.ChainID, &r.State, &r.Definition, &drop, &r.UpdatedAt, &r.Version); err != nil {
			return nil, fmt.Errorf("storage: reading %s: %w", tableChainRegistry, err)
		}
		r.DropData = drop == 1
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("storage: reading %s: %w", tableChainRegistry, err)
	}
	return out, nil
}

// ChainRecord returns the newest row of one chain; found is false if the
// chain was never registered.
func (c *RecordReader) ChainRecord(ctx context.Context, chainID string) (ChainRecord, bool, error) {
	all, err := c.ChainRecords(ctx)
	if err != nil {
		return ChainRecord{}, false, err
	}
	for _, r := range all {
		if r.ChainID == chainID {
			return r, true, nil
		}
	}
	return ChainRecord{}, false, nil
}

// ChainTables lists the tables of the database that hold rows of chains
// (a chain_id column, a MergeTree engine), the registry itself left out:
// the tables a chain's data lives in, whatever later migrations add.
func (c *Records) ChainTables(ctx context.Context) ([]string, error) {
	ctx, cancel := c.queryContext(ctx)
	defer cancel()
	query, args := chainTablesQuery{c.cfg.Database}.toSQL()
	rows, err := c.conn.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("storage: listing the tables with a chain_id column: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, fmt.Errorf("storage: listing the tables with a chain_id column: %w", err)
		}
		if !identifierRE.MatchString(name) {
			// Never written into a statement unquoted; no table of the
			// schema has such a name.
			return nil, fmt.Errorf("storage: table %q has a name the schema never gives", name)
		}
		out = append(out, name)
	}
	return out, rows.Err()
}

// ChainRows counts the stored rows of a chain per table (every version,
// superseded ones too: what a deletion has to remove).
func (c *Records) ChainRows(ctx context.Context, chainID string) (map[string]uint64, error) {
	tables, err := c.ChainTables(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]uint64{}
	for _, t := range tables {
		var n uint64
		if err := c.queryRow(ctx, chainRowsQuery{t, chainID}, &n); err != nil {
			return nil, fmt.Errorf("storage: counting rows of chain %q in %s: %w", chainID, t, err)
		}
		out[t] = n
	}
	return out, nil
}

// DeleteChainRows deletes every row of the chain from every table that
// holds chain rows (ChainTables), by one mutation per table:
// ALTER TABLE … DELETE WHERE chain_id = …, which ClickHouse 18.16 and
// modern servers both run. Partitions hold every chain's heights, so they
// are never dropped. Mutations run in the background: PendingMutations
// says when they are done. Returns the tables.
func (c *Records) DeleteChainRows(ctx context.Context, chainID string) ([]string, error) {
	if chainID == "" {
		return nil, errors.New("storage: DeleteChainRows: empty chain id")
	}
	tables, err := c.ChainTables(ctx)
	if err != nil {
		return nil, err
	}
	for _, t := range tables {
		if err := c.mutate(ctx, deleteChainRowsStmt(t, chainID)); err != nil {
			return nil, fmt.Errorf("storage: deleting the rows of chain %q from %s: %w", chainID, t, err)
		}
	}
	return tables, nil
}

// mutate starts a mutation (ALTER TABLE … DELETE): the server records it
// and returns, and runs it in the background; on a replicated table it
// reaches every replica through the replication log, so it is sent to one
// host only, without ON CLUSTER. Retention (prune.go) deletes old heights
// with it too.
func (c *db) mutate(ctx context.Context, s deleteRowsStmt) error {
	ctx, cancel := c.queryContext(ctx)
	defer cancel()
	query, args := s.toSQL()
	return c.conn.Exec(ctx, query, args...)
}

// PendingMutations counts the database's mutations not yet done.
func (c *mutations) PendingMutations(ctx context.Context) (uint64, error) {
	var n uint64
	if err := c.queryRow(ctx, pendingMutationsQuery{c.cfg.Database}, &n); err != nil {
		return 0, fmt.Errorf("storage: reading system.mutations: %w", err)
	}
	return n, nil
}

// chainRecordVersionQuery is the highest stored version of one chain (0
// for none).
type chainRecordVersionQuery struct{ chainID string }

func (q chainRecordVersionQuery) toSQL() (string, []any) {
	return "SELECT max(version) FROM " + tableChainRegistry + " WHERE chain_id = ?", []any{q.chainID}
}

// chainRecordsQuery reads the newest row per chain: argMax by version,
// right before and after a merge alike.
type chainRecordsQuery struct{}

func (chainRecordsQuery) toSQL() (string, []any) {
	return `SELECT chain_id, argMax(state, version), argMax(definition, version), argMax(drop_data, version),
		argMax(updated_at, version), max(version)
		FROM ` + tableChainRegistry + ` GROUP BY chain_id ORDER BY chain_id`, nil
}

// chainTablesQuery lists the MergeTree tables of a database with a
// chain_id column, but the registry.
type chainTablesQuery struct{ database string }

func (q chainTablesQuery) toSQL() (string, []any) {
	return `SELECT name FROM system.tables
		WHERE database = ? AND engine LIKE '%MergeTree' AND name != '` + tableChainRegistry + `'
		AND name IN (SELECT table FROM system.columns WHERE database = ? AND name = 'chain_id')
		ORDER BY name`, []any{q.database, q.database}
}

// chainRowsQuery counts a chain's rows in one table (a name from
// ChainTables, checked to be a plain identifier).
type chainRowsQuery struct{ table, chainID string }

func (q chainRowsQuery) toSQL() (string, []any) {
	return "SELECT count() FROM " + q.table + " WHERE chain_id = ?", []any{q.chainID}
}

// deleteRowsStmt is a mutation deleting the rows of a table (a name from
// the schema, never user input) that match cond, whose `?` take args.
type deleteRowsStmt struct {
	table string
	cond  string
	args  []any
}

func (s deleteRowsStmt) toSQL() (string, []any) {
	return "ALTER TABLE " + s.table + " DELETE WHERE " + s.cond, s.args
}

// deleteChainRowsStmt is the mutation deleting one chain's rows of a table.
func deleteChainRowsStmt(table, chainID string) deleteRowsStmt {
	return deleteRowsStmt{table, "chain_id = ?", []any{chainID}}
}

// pendingMutationsQuery counts unfinished mutations of a database.
type pendingMutationsQuery struct{ database string }

func (q pendingMutationsQuery) toSQL() (string, []any) {
	return "SELECT count() FROM system.mutations WHERE database = ? AND is_done = 0", []any{q.database}
}
