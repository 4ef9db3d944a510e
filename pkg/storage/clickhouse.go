package storage

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

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
	// Addr is host:port of the server's Protocol: the native protocol's
	// port (9000 by default on a server), or the HTTP interface's (8123).
	Addr string `mapstructure:"addr"`
	// Protocol is native (empty: the default) or http (protocol.go).
	Protocol string `mapstructure:"protocol"`
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
	// SkipTokenTransfers turns off the token transfer tables in the write
	// path (transfers_write.go): WriteBlocks then neither derives nor
	// tombstones transfers. Off (transfers written) by default.
	SkipTokenTransfers bool `mapstructure:"skip_token_transfers"`
	// Compression of the native protocol's blocks: auto (empty: none to a
	// loopback server, LZ4 to any other), lz4 or none (compression.go).
	Compression string `mapstructure:"compression"`
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
	if c.Protocol != "" && c.Protocol != ProtocolNative && c.Protocol != ProtocolHTTP {
		return fmt.Errorf("clickhouse.protocol: %q is not one of %s, %s", c.Protocol, ProtocolNative, ProtocolHTTP)
	}
	if !validCompression(c.Compression) {
		return fmt.Errorf("clickhouse.compression: %q is not one of %s", c.Compression, strings.Join(compressionValues, ", "))
	}
	return nil
}

// String hides the password, so a logged or printed Config never shows it.
func (c Config) String() string {
	pw := ""
	if c.Password != "" {
		pw = "***"
	}
	return fmt.Sprintf("{Addr:%s Protocol:%s Database:%s Username:%s Password:%s DialTimeout:%s QueryTimeout:%s MigrateTimeout:%s Cluster:%s Compression:%s}",
		c.Addr, c.Protocol, c.Database, c.Username, pw, c.DialTimeout, c.QueryTimeout, c.MigrateTimeout, c.Cluster, c.Compression)
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

// ClickHouse is the indexer's store on a ClickHouse server: the one write
// path (WriteBlocks, RemoveBlock), the scheduler's progress queries, the
// per-chain state, the aggregator's and retention's reads and writes, the
// chain registry's records and the migrations. The query API reads
// through a Reader instead (reader.go), which has no write method. It is
// safe for concurrent use: the driver pools connections.
type ClickHouse struct {
	*db
	transferObserver transferObserverSlot // transfers_write.go
	// beforeTraces writes as a binary from before the traces tables
	// (0051-0053) did, for tests of older data: no traces rows, marks
	// without their traced flag.
	beforeTraces bool
}

// Open connects over the configured protocol and creates the database if it
// does not exist. It does not migrate; call Migrate.
func Open(ctx context.Context, cfg Config, logger *zap.Logger) (*ClickHouse, error) {
	d, err := open(ctx, cfg, logger, true)
	if err != nil {
		return nil, err
	}
	return &ClickHouse{db: d}, nil
}

// Reader is the read-only view of the same connection, for a process that
// both indexes and serves the query API (the dev stack, tests, benches).
func (c *ClickHouse) Reader() *Reader { return &Reader{c.db} }
