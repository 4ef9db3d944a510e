package storage

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"go.uber.org/zap"
)

// Defaults for the zero durations of Config.
const (
	DefaultDialTimeout    = 10 * time.Second
	DefaultQueryTimeout   = 30 * time.Second
	DefaultMigrateTimeout = 24 * time.Hour
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
	// Cluster, when set, names the ClickHouse cluster (remote_servers) whose
	// every host holds a replica of every table: migrations run ON CLUSTER
	// with Replicated engines (cluster.go). Empty: one server.
	Cluster string `mapstructure:"cluster"`
	// MigrateTimeout bounds each migration that fills a table from another
	// (a backfill, INSERT … SELECT), which reads the whole source table and
	// can take far longer than a query; zero means DefaultMigrateTimeout.
	// DDL migrations keep QueryTimeout.
	MigrateTimeout time.Duration `mapstructure:"migrate_timeout"`
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
	if c.Cluster != "" && !identifierRE.MatchString(c.Cluster) {
		return fmt.Errorf("clickhouse.cluster: %q must be letters, digits and _ and not start with a digit", c.Cluster)
	}
	if c.MigrateTimeout < 0 {
		return fmt.Errorf("clickhouse.migrate_timeout: %s is negative", c.MigrateTimeout)
	}
	return nil
}

// String hides the password, so a logged or printed Config never shows it.
func (c Config) String() string {
	pw := ""
	if c.Password != "" {
		pw = "***"
	}
	return fmt.Sprintf("{Addr:%s Database:%s Username:%s Password:%s DialTimeout:%s QueryTimeout:%s MigrateTimeout:%s Cluster:%s}",
		c.Addr, c.Database, c.Username, pw, c.DialTimeout, c.QueryTimeout, c.MigrateTimeout, c.Cluster)
}

func (c Config) withDefaults() Config {
	if c.DialTimeout == 0 {
		c.DialTimeout = DefaultDialTimeout
	}
	if c.QueryTimeout == 0 {
		c.QueryTimeout = DefaultQueryTimeout
	}
	if c.MigrateTimeout == 0 {
		c.MigrateTimeout = DefaultMigrateTimeout
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
	// server is the version asked at Open; settings are the insert
	// settings it knows (settings.go).
	server   serverVersion
	settings clickhouse.Settings

	// scanWindow and scanChunk are fields so tests can make them tiny and
	// walk every branch of the scan with a handful of heights.
	scanWindow uint64
	scanChunk  uint64
	// progressEvery is how often a backfill migration logs its progress; a
	// field so a test can see the line without a long backfill.
	progressEvery time.Duration
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
		conn:          conn,
		cfg:           cfg,
		log:           logger,
		scanWindow:    defaultScanWindow,
		scanChunk:     defaultScanChunk,
		progressEvery: defaultProgressEvery,
	}
	var version string
	if err := c.queryRow(ctx, serverVersionQuery{}, &version); err != nil {
		conn.Close()
		return nil, fmt.Errorf("storage: asking clickhouse %s for its version: %w", cfg.Addr, err)
	}
	if c.server, err = parseServerVersion(version); err != nil {
		conn.Close()
		return nil, fmt.Errorf("storage: clickhouse %s: %w", cfg.Addr, err)
	}
	c.settings = insertSettings(c.server)
	logger.Info("connected to clickhouse", zap.String("server_version", version),
		zap.Any("insert_settings", c.settings))
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
	if cfg.Cluster != "" {
		var err error
		if query, err = (clusterDDL{cfg.Cluster, cfg.Database}).rewrite(query); err != nil {
			return fmt.Errorf("storage: creating database %q: %w", cfg.Database, err)
		}
	}
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

// insert sends a few rows, row by row, as one native block via
// PrepareBatch. Bulk data goes through insertColumns.
func (c *ClickHouse) insert(ctx context.Context, s insertStmt, rows [][]any) error {
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
func (c *ClickHouse) insertColumns(ctx context.Context, s insertStmt, n int, cols []any) error {
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
func (c *ClickHouse) prepareInsert(ctx context.Context, s insertStmt) (driver.Batch, error) {
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
