package storage

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/tideline-dev/tideline/pkg/chain"
	"go.uber.org/zap"
)

// Defaults for the zero durations of Config.
const (
	DefaultDialTimeout  = 10 * time.Second
	DefaultQueryTimeout = 30 * time.Second
)

// Sizes for MissingHeights and Watermark. A window is one grouped count
// query; it bounds the server memory of uniqExact to about a million
// values. A chunk is the unit that is skipped when full or read row by row
// when it has holes, so one ragged chunk transfers at most 10k numbers.
const (
	defaultScanWindow = 1_000_000
	defaultScanChunk  = 10_000
)

// Config is the clickhouse.* section of the configuration.
type Config struct {
	// Addr is host:port of the native protocol (9000 by default on a
	// server), not the HTTP port.
	Addr     string `mapstructure:"addr"`
	Database string `mapstructure:"database"`
	Username string `mapstructure:"username"`
	Password string `mapstructure:"password"`
	// DialTimeout bounds connecting; zero means DefaultDialTimeout.
	DialTimeout time.Duration `mapstructure:"dial_timeout"`
	// QueryTimeout bounds each statement; zero means DefaultQueryTimeout.
	QueryTimeout time.Duration `mapstructure:"query_timeout"`
}

// Validate reports the first bad setting by its configuration key.
func (c Config) Validate() error {
	if c.Addr == "" {
		return errors.New("clickhouse.addr: required (host:port of the native protocol)")
	}
	host, port, err := net.SplitHostPort(c.Addr)
	if err != nil {
		return fmt.Errorf("clickhouse.addr: %q is not host:port: %v", c.Addr, err)
	}
	if p, err := strconv.Atoi(port); err != nil || p <= 0 || p > 65535 || host == "" {
		return fmt.Errorf("clickhouse.addr: %q is not host:port with a port in 1-65535", c.Addr)
	}
	if c.Database == "" {
		return errors.New("clickhouse.database: required")
	}
	if !identifierRE.MatchString(c.Database) {
		return fmt.Errorf("clickhouse.database: %q must be letters, digits and _ and not start with a digit", c.Database)
	}
	if c.DialTimeout < 0 {
		return fmt.Errorf("clickhouse.dial_timeout: %s is negative", c.DialTimeout)
	}
	if c.QueryTimeout < 0 {
		return fmt.Errorf("clickhouse.query_timeout: %s is negative", c.QueryTimeout)
	}
	return nil
}

// String hides the password, so a logged or printed Config never shows it.
func (c Config) String() string {
	pw := ""
	if c.Password != "" {
		pw = "***"
	}
	return fmt.Sprintf("{Addr:%s Database:%s Username:%s Password:%s DialTimeout:%s QueryTimeout:%s}",
		c.Addr, c.Database, c.Username, pw, c.DialTimeout, c.QueryTimeout)
}

func (c Config) withDefaults() Config {
	if c.DialTimeout == 0 {
		c.DialTimeout = DefaultDialTimeout
	}
	if c.QueryTimeout == 0 {
		c.QueryTimeout = DefaultQueryTimeout
	}
	return c
}

// ClickHouse is the Store on a ClickHouse server. It is safe for
// concurrent use: the driver pools connections.
type ClickHouse struct {
	conn  driver.Conn
	cfg   Config
	log   *zap.Logger
	clock versionClock

	// scanWindow and scanChunk are fields so tests can make them tiny and
	// walk every branch of the scan with a handful of heights.
	scanWindow uint64
	scanChunk  uint64
}

var _ Store = (*ClickHouse)(nil)

// Open connects over the native protocol and creates the database if it
// does not exist. It does not migrate; call Migrate.
func Open(ctx context.Context, cfg Config, logger *zap.Logger) (*ClickHouse, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if logger == nil {
		logger = zap.NewNop()
	}
	logger = logger.With(zap.String("clickhouse_addr", cfg.Addr), zap.String("database", cfg.Database))

	// The handshake names the database and fails if it is missing, so the
	// check and the create go through a connection to the user's default.
	boot, err := connect(ctx, cfg, "")
	if err != nil {
		return nil, err
	}
	err = ensureDatabase(ctx, boot, cfg, logger)
	boot.Close()
	if err != nil {
		return nil, err
	}
	conn, err := connect(ctx, cfg, cfg.Database)
	if err != nil {
		return nil, err
	}
	c := &ClickHouse{
		conn:       conn,
		cfg:        cfg,
		log:        logger,
		scanWindow: defaultScanWindow,
		scanChunk:  defaultScanChunk,
	}
	if v, err := conn.ServerVersion(); err == nil {
		logger.Info("connected to clickhouse", zap.String("server_version", v.String()))
	}
	return c, nil
}

// connect opens a pool and proves it with a ping. Errors name the address,
// user and database, never the password.
func connect(ctx context.Context, cfg Config, database string) (driver.Conn, error) {
	user := cfg.Username
	if user == "" {
		user = "default"
	}
	where := fmt.Sprintf("clickhouse %s (user %q, database %q)", cfg.Addr, user, database)
	conn, err := clickhouse.Open(&clickhouse.Options{
		Addr: []string{cfg.Addr},
		Auth: clickhouse.Auth{
			Database: database,
			Username: cfg.Username,
			Password: cfg.Password,
		},
		DialTimeout: cfg.DialTimeout,
		ReadTimeout: cfg.QueryTimeout,
		// Raw JSON blobs compress several-fold; 18.16 speaks LZ4 natively.
		Compression: &clickhouse.Compression{Method: clickhouse.CompressionLZ4},
	})
	if err != nil {
		return nil, fmt.Errorf("storage: opening %s: %w", where, err)
	}
	pctx, cancel := context.WithTimeout(ctx, cfg.DialTimeout)
	defer cancel()
	if err := conn.Ping(pctx); err != nil {
		conn.Close()
		return nil, fmt.Errorf("storage: connecting to %s: %w", where, err)
	}
	return conn, nil
}

func ensureDatabase(ctx context.Context, conn driver.Conn, cfg Config, log *zap.Logger) error {
	ctx, cancel := context.WithTimeout(ctx, cfg.QueryTimeout)
	defer cancel()
	query, args := databaseExistsQuery{cfg.Database}.toSQL()
	var n uint64
	if err := conn.QueryRow(ctx, query, args...).Scan(&n); err != nil {
		return fmt.Errorf("storage: checking database %q on %s: %w", cfg.Database, cfg.Addr, err)
	}
	if n > 0 {
		return nil
	}
	query, _ = createDatabaseStmt{cfg.Database}.toSQL()
	if err := conn.Exec(ctx, query); err != nil {
		return fmt.Errorf("storage: creating database %q on %s: %w", cfg.Database, cfg.Addr, err)
	}
	log.Info("created database")
	return nil
}

// Close releases the connections.
func (c *ClickHouse) Close() error {
	return c.conn.Close()
}

// WriteBlock writes one height: blocks, then transactions and logs, then
// the indexed_heights mark, each as one batch insert with named columns.
// All rows share one version, newer than any earlier write from this
// process, so a rewrite replaces the previous rows of the height.
//
// A rewrite with fewer transactions or logs than before (a reorg) leaves
// the old rows at the higher positions: ReplacingMergeTree only replaces
// rows with the same key. A height that may hold another block is written
// with RewriteBlock, which supersedes those rows too.
func (c *ClickHouse) WriteBlock(ctx context.Context, chainID string, data *chain.BlockData) error {
	if chainID == "" {
		return errors.New("storage: WriteBlock: empty chain id")
	}
	if data == nil {
		return fmt.Errorf("storage: WriteBlock chain %q: nil block data", chainID)
	}
	b := &data.Block
	if err := checkBlockData(data); err != nil {
		return fmt.Errorf("storage: WriteBlock chain %q height %d: %w", chainID, b.Number, err)
	}
	version := c.clock.next()

	rows := [][]any{blockRow(chainID, b, version)}
	if err := c.insert(ctx, insertStmt{tableBlocks, blockColumns}, rows); err != nil {
		return writeErr(tableBlocks, chainID, b.Number, err)
	}

	if len(data.Transactions) > 0 {
		rows = rows[:0]
		for i := range data.Transactions {
			rows = append(rows, txRow(chainID, &data.Transactions[i], version))
		}
		if err := c.insert(ctx, insertStmt{tableTransactions, transactionColumns}, rows); err != nil {
			return writeErr(tableTransactions, chainID, b.Number, err)
		}
	}

	if len(data.Logs) > 0 {
		rows = rows[:0]
		for i := range data.Logs {
			rows = append(rows, logRow(chainID, &data.Logs[i], version))
		}
		if err := c.insert(ctx, insertStmt{tableLogs, logColumns}, rows); err != nil {
			return writeErr(tableLogs, chainID, b.Number, err)
		}
	}

	rows = [][]any{{chainID, b.Number, b.Hash, time.Now().UTC().Truncate(time.Second), version}}
	if err := c.insert(ctx, insertStmt{tableIndexedHeights, indexedHeightColumns}, rows); err != nil {
		return writeErr(tableIndexedHeights, chainID, b.Number, err)
	}
	return nil
}

// blockRow, txRow and logRow are one row each in the order of
// blockColumns, transactionColumns and logColumns.
func blockRow(chainID string, b *chain.Block, version uint64) []any {
	return []any{
		chainID, b.Number, b.Hash, b.ParentHash, time.Unix(int64(b.Timestamp), 0).UTC(), b.Miner,
		b.GasUsed, b.GasLimit, b.BaseFeePerGas, b.Size, b.TxCount,
		b.LogCount, b.Raw, version,
	}
}

func txRow(chainID string, t *chain.Transaction, version uint64) []any {
	return []any{
		chainID, t.BlockNumber, t.BlockHash, t.Index, t.Hash, t.Type,
		t.From, t.To, t.Value, t.Nonce, t.Gas, t.GasPrice,
		t.Status, t.GasUsed, t.EffectiveGasPrice, t.ContractAddress,
		t.LogCount, t.Raw, t.ReceiptRaw, version,
	}
}

func logRow(chainID string, l *chain.Log, version uint64) []any {
	var topics [4]string
	copy(topics[:], l.Topics)
	return []any{
		chainID, l.BlockNumber, l.BlockHash, l.TxHash, l.TxIndex,
		l.LogIndex, l.Address, topics[0], topics[1], topics[2], topics[3],
		uint8(len(l.Topics)), l.Data, l.Raw, version,
	}
}

// checkBlockData refuses data that would be stored under the wrong key or
// lose information in a column.
func checkBlockData(d *chain.BlockData) error {
	if d.Block.Timestamp > math.MaxUint32 {
		return fmt.Errorf("block timestamp %d does not fit a DateTime", d.Block.Timestamp)
	}
	for i := range d.Transactions {
		if n := d.Transactions[i].BlockNumber; n != d.Block.Number {
			return fmt.Errorf("transaction %d (%s) has block number %d", i, d.Transactions[i].Hash, n)
		}
	}
	for i := range d.Logs {
		l := &d.Logs[i]
		if l.BlockNumber != d.Block.Number {
			return fmt.Errorf("log %d has block number %d", l.LogIndex, l.BlockNumber)
		}
		if len(l.Topics) > 4 {
			return fmt.Errorf("log %d has %d topics; the EVM allows at most 4", l.LogIndex, len(l.Topics))
		}
	}
	return nil
}

func writeErr(table, chainID string, height uint64, err error) error {
	return fmt.Errorf("storage: writing %s for chain %q height %d: %w", table, chainID, height, err)
}

// IsIndexed reports whether the height is marked indexed.
func (c *ClickHouse) IsIndexed(ctx context.Context, chainID string, height uint64) (bool, error) {
	var n uint64
	if err := c.queryRow(ctx, indexedCountQuery{chainID, height}, &n); err != nil {
		return false, fmt.Errorf("storage: reading %s for chain %q height %d: %w", tableIndexedHeights, chainID, height, err)
	}
	return n > 0, nil
}

// LastIndexed returns the highest indexed height.
func (c *ClickHouse) LastIndexed(ctx context.Context, chainID string) (uint64, bool, error) {
	var top, n uint64
	if err := c.queryRow(ctx, lastIndexedQuery{chainID}, &top, &n); err != nil {
		return 0, false, fmt.Errorf("storage: reading highest %s for chain %q: %w", tableIndexedHeights, chainID, err)
	}
	return top, n > 0, nil
}

// Watermark returns the highest H >= from with [from, H] all indexed.
//
// It is the first hole in [from, LastIndexed] minus one, found with the
// same scan as MissingHeights: one grouped count per million heights, and
// at most one 10k chunk read row by row. That is a few queries however far
// the watermark has moved, with no window functions.
func (c *ClickHouse) Watermark(ctx context.Context, chainID string, from uint64) (uint64, bool, error) {
	top, found, err := c.LastIndexed(ctx, chainID)
	if err != nil || !found || top < from {
		return 0, false, err
	}
	holes, err := c.missingHeights(ctx, chainID, from, top, 1)
	if err != nil {
		return 0, false, fmt.Errorf("storage: watermark for chain %q from %d: %w", chainID, from, err)
	}
	switch {
	case len(holes) == 0:
		return top, true, nil
	case holes[0] == from:
		return 0, false, nil
	default:
		return holes[0] - 1, true, nil
	}
}

// MissingHeights lists, in ascending order, up to limit heights in
// [from, to] that are not indexed.
//
// The range is scanned in windows of a million heights. Per window one
// query counts the distinct indexed heights of each aligned 10k chunk; a
// full chunk is skipped, an empty one is all holes, and only a partly
// filled one is read (its indexed heights, in order) and walked in Go. The
// scan stops as soon as limit holes are found, so the cost follows the
// holes and the distance to them, not the size of the chain.
func (c *ClickHouse) MissingHeights(ctx context.Context, chainID string, from, to uint64, limit int) ([]uint64, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("storage: MissingHeights chain %q: limit must be positive, got %d", chainID, limit)
	}
	out, err := c.missingHeights(ctx, chainID, from, to, limit)
	if err != nil {
		return nil, fmt.Errorf("storage: missing heights for chain %q in [%d, %d]: %w", chainID, from, to, err)
	}
	return out, nil
}

func (c *ClickHouse) missingHeights(ctx context.Context, chainID string, from, to uint64, limit int) ([]uint64, error) {
	out := []uint64{}
	if from > to {
		return out, nil
	}
	chunk := c.scanChunk
	for lo := from; ; {
		hi := to
		if to-lo >= c.scanWindow {
			hi = lo + c.scanWindow - 1
		}
		counts, err := c.chunkCounts(ctx, chainID, lo, hi)
		if err != nil {
			return nil, err
		}
		// k stops by equality, not k <= hi/chunk, which would wrap
		// forever at the top of the uint64 range.
		for k, last := lo/chunk, hi/chunk; ; k++ {
			a := max(lo, k*chunk)
			b := min(hi, satAdd(k*chunk, chunk-1))
			switch have := counts[k]; {
			case have == b-a+1:
				// no hole
			case have == 0:
				for h := a; len(out) < limit; h++ {
					out = append(out, h)
					if h == b {
						break
					}
				}
			default:
				if out, err = c.walkHoles(ctx, chainID, a, b, limit, out); err != nil {
					return nil, err
				}
			}
			if len(out) >= limit {
				return out, nil
			}
			if k == last {
				break
			}
		}
		if hi == to {
			return out, nil
		}
		lo = hi + 1
	}
}

func (c *ClickHouse) chunkCounts(ctx context.Context, chainID string, from, to uint64) (map[uint64]uint64, error) {
	ctx, cancel := c.queryContext(ctx)
	defer cancel()
	query, args := chunkCountsQuery{chainID: chainID, from: from, to: to, chunk: c.scanChunk}.toSQL()
	rows, err := c.conn.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("counting %s in [%d, %d]: %w", tableIndexedHeights, from, to, err)
	}
	defer rows.Close()
	counts := map[uint64]uint64{}
	for rows.Next() {
		var k, n uint64
		if err := rows.Scan(&k, &n); err != nil {
			return nil, fmt.Errorf("counting %s in [%d, %d]: %w", tableIndexedHeights, from, to, err)
		}
		counts[k] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("counting %s in [%d, %d]: %w", tableIndexedHeights, from, to, err)
	}
	return counts, nil
}

// walkHoles appends to out the heights of [from, to] that are not indexed,
// stopping at limit.
func (c *ClickHouse) walkHoles(ctx context.Context, chainID string, from, to uint64, limit int, out []uint64) ([]uint64, error) {
	ctx, cancel := c.queryContext(ctx)
	defer cancel()
	query, args := indexedNumbersQuery{chainID, from, to}.toSQL()
	rows, err := c.conn.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("reading %s in [%d, %d]: %w", tableIndexedHeights, from, to, err)
	}
	defer rows.Close()
	// next is the lowest height not yet accounted for; done is set once
	// `to` is accounted for, since next cannot step past MaxUint64.
	next, done := from, false
	for len(out) < limit && rows.Next() {
		var n uint64
		if err := rows.Scan(&n); err != nil {
			return nil, fmt.Errorf("reading %s in [%d, %d]: %w", tableIndexedHeights, from, to, err)
		}
		for ; next < n && len(out) < limit; next++ {
			out = append(out, next)
		}
		if n == to {
			done = true
		}
		next = n + 1
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading %s in [%d, %d]: %w", tableIndexedHeights, from, to, err)
	}
	for ; !done && len(out) < limit; next++ {
		out = append(out, next)
		if next == to {
			break
		}
	}
	return out, nil
}

// BlockHashes returns the stored hash per height in [from, to] (newest
// write wins), for comparing with the chain after a reorg. Heights with no
// block row are absent from the map.
func (c *ClickHouse) BlockHashes(ctx context.Context, chainID string, from, to uint64) (map[uint64]string, error) {
	ctx, cancel := c.queryContext(ctx)
	defer cancel()
	query, args := blockHashesQuery{chainID, from, to}.toSQL()
	rows, err := c.conn.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("storage: reading %s hashes for chain %q in [%d, %d]: %w", tableBlocks, chainID, from, to, err)
	}
	defer rows.Close()
	out := map[uint64]string{}
	for rows.Next() {
		var (
			n    uint64
			hash string
		)
		if err := rows.Scan(&n, &hash); err != nil {
			return nil, fmt.Errorf("storage: reading %s hashes for chain %q in [%d, %d]: %w", tableBlocks, chainID, from, to, err)
		}
		out[n] = hash
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("storage: reading %s hashes for chain %q in [%d, %d]: %w", tableBlocks, chainID, from, to, err)
	}
	return out, nil
}

// CountRows counts the logical rows (one per key, with FINAL) of a chain's
// blocks, transactions and logs. It reads whole tables: for tests and
// operators, not for hot paths.
func (c *ClickHouse) CountRows(ctx context.Context, chainID string) (blocks, txs, logs uint64, err error) {
	counts := [3]uint64{}
	for i, table := range []string{tableBlocks, tableTransactions, tableLogs} {
		if err := c.queryRow(ctx, countFinalQuery{table, chainID}, &counts[i]); err != nil {
			return 0, 0, 0, fmt.Errorf("storage: counting %s for chain %q: %w", table, chainID, err)
		}
	}
	return counts[0], counts[1], counts[2], nil
}

// SaveState stores a named value for the chain; the newest save wins.
func (c *ClickHouse) SaveState(ctx context.Context, chainID, key string, value uint64) error {
	if chainID == "" || key == "" {
		return fmt.Errorf("storage: SaveState: empty chain id (%q) or key (%q)", chainID, key)
	}
	rows := [][]any{{chainID, key, value, time.Now().UTC().Truncate(time.Second), c.clock.next()}}
	if err := c.insert(ctx, insertStmt{tableChainState, chainStateColumns}, rows); err != nil {
		return fmt.Errorf("storage: writing %s for chain %q key %q: %w", tableChainState, chainID, key, err)
	}
	return nil
}

// LoadState returns the newest saved value; found is false if none was.
func (c *ClickHouse) LoadState(ctx context.Context, chainID, key string) (uint64, bool, error) {
	var v, n uint64
	if err := c.queryRow(ctx, loadStateQuery{chainID, key}, &v, &n); err != nil {
		return 0, false, fmt.Errorf("storage: reading %s for chain %q key %q: %w", tableChainState, chainID, key, err)
	}
	return v, n > 0, nil
}

// statement is what queries.go builds.
type statement interface {
	toSQL() (string, []any)
}

// queryContext applies the per-statement timeout. clickhouse-go turns the
// deadline into max_execution_time, so the server stops too.
func (c *ClickHouse) queryContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.cfg.QueryTimeout)
}

func (c *ClickHouse) queryRow(ctx context.Context, s statement, dest ...any) error {
	ctx, cancel := c.queryContext(ctx)
	defer cancel()
	query, args := s.toSQL()
	return c.conn.QueryRow(ctx, query, args...).Scan(dest...)
}

func (c *ClickHouse) exec(ctx context.Context, s statement) error {
	query, args := s.toSQL()
	if len(args) > 0 {
		return fmt.Errorf("exec with arguments is not used: %s", query)
	}
	return c.execSQL(ctx, query)
}

// execSQL runs DDL. Never an INSERT: those go through insert.
func (c *ClickHouse) execSQL(ctx context.Context, query string) error {
	ctx, cancel := c.queryContext(ctx)
	defer cancel()
	return c.conn.Exec(ctx, query)
}

// insert sends rows as one native block via PrepareBatch.
func (c *ClickHouse) insert(ctx context.Context, s insertStmt, rows [][]any) error {
	ctx, cancel := c.queryContext(ctx)
	defer cancel()
	query, _ := s.toSQL()
	batch, err := c.conn.PrepareBatch(ctx, query)
	if err != nil {
		return err
	}
	defer batch.Close()
	for i, row := range rows {
		if err := batch.Append(row...); err != nil {
			return fmt.Errorf("row %d: %w", i, err)
		}
	}
	return batch.Send()
}

// satAdd adds without wrapping past MaxUint64.
func satAdd(a, b uint64) uint64 {
	if s := a + b; s >= a {
		return s
	}
	return math.MaxUint64
}

// versionClock hands out ReplacingMergeTree versions: wall-clock
// nanoseconds, so writes from different processes order by time, but
// never repeating or going back within a process, so two writes of one
// height from this process always order by call.
type versionClock struct {
	last atomic.Uint64
}

func (v *versionClock) next() uint64 {
	for {
		now := uint64(time.Now().UnixNano())
		last := v.last.Load()
		if now <= last {
			now = last + 1
		}
		if v.last.CompareAndSwap(last, now) {
			return now
		}
	}
}
