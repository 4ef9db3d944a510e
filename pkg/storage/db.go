package storage

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/config"
)

// db is one pool of connections to the server and what every reader of it
// shares: the configuration, the server's version and the statement
// helpers. The indexer's store (ClickHouse) and the query API's Reader
// are two views of it, each with the methods its reader needs.
type db struct {
	conn  driver.Conn
	cfg   config.ClickHouse
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

	transferObserver transferObserverSlot // transfers_write.go
	// beforeTraces writes as a binary from before the traces tables
	// (0051-0053) did, for tests of older data: no traces rows, marks
	// without their traced flag.
	beforeTraces bool
	// beforeTopics writes as a binary from before topic_heights (0062):
	// no rows there.
	beforeTopics bool
}

// open connects over the configured protocol. With create (the indexer's
// store) it creates the database if it does not exist and asks the
// server's version, which decides the insert settings; a reader does
// neither: the database must exist, and it sends no insert (a user with
// readonly = 1 may neither create a database nor insert).
func open(ctx context.Context, cfg config.ClickHouse, logger *zap.Logger, create bool) (*db, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = withDefaults(cfg)
	if logger == nil {
		logger = zap.NewNop()
	}
	logger = logger.With(zap.String("clickhouse_addr", cfg.Addr), zap.String("database", cfg.Database))

	if create {
		// The handshake names the database and fails if it is missing, so
		// the check and the create go through a connection to the user's
		// default.
		boot, err := connect(ctx, cfg, "")
		if err != nil {
			return nil, err
		}
		err = ensureDatabase(ctx, boot, cfg, logger)
		boot.Close()
		if err != nil {
			return nil, err
		}
	}
	conn, err := connect(ctx, cfg, cfg.Database)
	if err != nil {
		return nil, err
	}
	c := &db{
		conn:          conn,
		cfg:           cfg,
		log:           logger,
		scanWindow:    defaultScanWindow,
		scanChunk:     defaultScanChunk,
		progressEvery: defaultProgressEvery,
	}
	if !create {
		logger.Info("connected to clickhouse to read")
		return c, nil
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
	compression, _ := effectiveCompression(cfg.Compression, cfg.Addr) // validated above
	logger.Info("connected to clickhouse", zap.String("server_version", version),
		zap.Any("insert_settings", c.settings), zap.String("compression", compression))
	return c, nil
}

// connect opens a pool and proves it with a ping. Errors name the address,
// user and database, never the password.
func connect(ctx context.Context, cfg config.ClickHouse, database string) (driver.Conn, error) {
	user := cfg.Username
	if user == "" {
		user = "default"
	}
	where := fmt.Sprintf("clickhouse %s (%s, user %q, database %q)", cfg.Addr, protocolName(cfg.Protocol), user, database)
	compression, err := effectiveCompression(cfg.Compression, cfg.Addr)
	if err != nil {
		return nil, err
	}
	conn, err := clickhouse.Open(&clickhouse.Options{
		Addr:     []string{cfg.Addr},
		Protocol: driverProtocol(cfg.Protocol),
		Auth: clickhouse.Auth{
			Database: database,
			Username: cfg.Username,
			Password: cfg.Password,
		},
		DialTimeout: cfg.DialTimeout,
		ReadTimeout: readTimeout(cfg),
		Compression: driverCompression(compression),
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

func ensureDatabase(ctx context.Context, conn driver.Conn, cfg config.ClickHouse, log *zap.Logger) error {
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

// close releases the connections (ClickHouse.Close, Reader.Close).
func (c *db) close() error {
	return c.conn.Close()
}

// statement is what queries.go builds.
type statement interface {
	toSQL() (string, []any)
}

// queryContext applies the per-statement timeout. clickhouse-go turns the
// deadline into max_execution_time, so the server stops too.
func (c *db) queryContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.cfg.QueryTimeout)
}

func (c *db) queryRow(ctx context.Context, s statement, dest ...any) error {
	ctx, cancel := c.queryContext(ctx)
	defer cancel()
	query, args := s.toSQL()
	return c.conn.QueryRow(ctx, query, args...).Scan(dest...)
}

func (c *db) exec(ctx context.Context, s statement) error {
	query, args := s.toSQL()
	if len(args) > 0 {
		return fmt.Errorf("exec with arguments is not used: %s", query)
	}
	return c.execSQL(ctx, query)
}

// execSQL runs DDL. Never an INSERT: those go through insert.
func (c *db) execSQL(ctx context.Context, query string) error {
	ctx, cancel := c.queryContext(ctx)
	defer cancel()
	return c.conn.Exec(ctx, query)
}

// readContext gives one API read its time budget twice: the driver's
// context ends with the caller's (cancelling the query on the server),
// and the query carries max_execution_time so that the server stops on its
// own even if the cancel packet is lost. The driver would otherwise derive
// max_execution_time from the deadline plus five seconds, so the context
// handed to it has no deadline, only the cancellation.
func (c *db) readContext(ctx context.Context) (context.Context, context.CancelFunc) {
	budget := c.cfg.QueryTimeout
	if d, ok := ctx.Deadline(); ok {
		budget = min(budget, time.Until(d))
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, cancel)
	timer := time.AfterFunc(budget, cancel)
	secs := int(math.Ceil(budget.Seconds()))
	if secs < 1 {
		secs = 1
	}
	rctx = clickhouse.Context(rctx, clickhouse.WithSettings(readSettings(secs)))
	return rctx, func() {
		stop()
		timer.Stop()
		cancel()
	}
}

// readSettings are every read's settings: its time budget, the server's
// cache of decompressed blocks, and a small read buffer (readBufferSize). A read of scattered positions
// decompresses a block of every column it names at every position, and
// the cache keeps those blocks for the next read of the same positions
// (a page shown again, a popular address, the head's blocks). 18.16 reads
// through it by default; newer servers do not (use_uncompressed_cache = 0
// there), so without it a deployment's every read decompressed again.
// Measured on 18.16, 25 positions of token_transfers read again: 14-21 ms
// with it, 76-160 ms without (docs/performance.md). A large read leaves
// the cache alone on its own (merge_tree_max_rows_to_use_cache).
func readSettings(budgetSeconds int) clickhouse.Settings {
	return clickhouse.Settings{"max_execution_time": budgetSeconds, "use_uncompressed_cache": 1, "max_read_buffer_size": readBufferSize}
}

// readBufferSize is the read buffer of each column a read opens (the
// server's default is 1 MiB). 18.16 fills the whole buffer at every seek,
// so a read of 25 scattered positions naming 18 columns copied up to
// 450 MiB to use a few hundred kilobytes: 103-207 ms with 1 MiB, 32-41 ms with
// 32 KiB, on the 100,000-height bench index, new positions each time; a
// scan of 50,000 heights of logs took the same with either
// (docs/performance.md).
const readBufferSize = 32 << 10

// readErr wraps a failed read, as a *TimeoutError when its time ran out
// (rctx ended: the caller's deadline or cancel, or the budget) or the
// server stopped it at max_execution_time.
func readErr(rctx context.Context, what string, err error) error {
	var exc *clickhouse.Exception
	if rctx.Err() != nil || (errors.As(err, &exc) && exc.Code == clickhouseTimeoutCode) {
		return &TimeoutError{What: what, Err: err}
	}
	return fmt.Errorf("storage: %s: %w", what, err)
}

// query runs a read statement and hands each row to scan.
func (c *db) query(ctx context.Context, what string, s statement, scan func(driver.Rows) error) error {
	rctx, cancel := c.readContext(ctx)
	defer cancel()
	sql, args := s.toSQL()
	rows, err := c.conn.Query(rctx, sql, args...)
	if err != nil {
		return readErr(rctx, what, err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return readErr(rctx, what, err)
		}
	}
	if err := rows.Err(); err != nil {
		return readErr(rctx, what, err)
	}
	return nil
}
