package config

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ClickHouse says where the database is: the clickhouse section, and the
// one type storage.Open and storage.OpenReader take.
type ClickHouse struct {
	// Addr is host:port of the server's Protocol: the native protocol's
	// port (9000 by default on a server), or the HTTP interface's (8123).
	Addr string `mapstructure:"addr"`
	// Protocol is native (empty: the default) or http (docs/operations.md,
	// "Supported ClickHouse versions"; pkg/storage/protocol.go).
	Protocol string `mapstructure:"protocol"`
	Database string `mapstructure:"database"`
	Username string `mapstructure:"username"`
	Password string `mapstructure:"password"`
	// DialTimeout bounds connecting; zero means storage's default.
	DialTimeout time.Duration `mapstructure:"dial_timeout"`
	// QueryTimeout bounds each statement; zero means storage's default.
	QueryTimeout time.Duration `mapstructure:"query_timeout"`
	// Cluster names a ClickHouse cluster (remote_servers) whose hosts are
	// replicas of one shard: migrations run ON CLUSTER with Replicated
	// engines. Empty: one server (docs/operations.md, "Scaling out").
	Cluster string `mapstructure:"cluster"`
	// MigrateTimeout bounds each migration that fills a table from indexed
	// data (a backfill, INSERT … SELECT), which reads whole tables and can
	// take far longer than a query: see docs/operations.md. DDL migrations
	// keep QueryTimeout; zero means storage's default.
	MigrateTimeout time.Duration `mapstructure:"migrate_timeout"`
	// SkipTokenTransfers turns off deriving token transfers in the write
	// path (docs/operations.md, "Token transfers"): WriteBlocks then
	// neither derives nor tombstones transfers.
	SkipTokenTransfers bool `mapstructure:"skip_token_transfers"`
	// Compression of the native protocol's blocks: auto (empty: none to a
	// loopback server, lz4 to any other), lz4 or none.
	Compression string `mapstructure:"compression"`
}

// The values of clickhouse.protocol and clickhouse.compression (empty is
// the first of each).
var (
	clickhouseProtocols    = []string{"native", "http"}
	clickhouseCompressions = []string{"auto", "lz4", "none"}
)

// Validate reports the first bad setting of the section by its key (a
// *KeyError), for whoever opens a connection with it (storage.Open):
// zero durations are allowed there and mean the defaults.
func (c ClickHouse) Validate() error {
	bad := func(key, format string, args ...any) error {
		return &KeyError{Key: "clickhouse." + key, Reason: fmt.Sprintf(format, args...)}
	}
	if c.Addr == "" {
		return bad("addr", "required (host:port of clickhouse.protocol: the native protocol, the default, or http)")
	}
	host, port, err := net.SplitHostPort(c.Addr)
	if err != nil {
		return bad("addr", "%q is not host:port: %v", c.Addr, err)
	}
	if p, err := strconv.Atoi(port); err != nil || p <= 0 || p > 65535 || host == "" {
		return bad("addr", "%q is not host:port with a port in 1-65535", c.Addr)
	}
	if c.Database == "" {
		return bad("database", "required")
	}
	// Both names go into statements unquoted.
	if !identifierRE.MatchString(c.Database) {
		return bad("database", "%q must be letters, digits and _ and not start with a digit", c.Database)
	}
	if c.Cluster != "" && !identifierRE.MatchString(c.Cluster) {
		return bad("cluster", "%q must be letters, digits and _ and not start with a digit (the name in remote_servers)", c.Cluster)
	}
	for key, d := range map[string]time.Duration{"dial_timeout": c.DialTimeout, "query_timeout": c.QueryTimeout, "migrate_timeout": c.MigrateTimeout} {
		if d < 0 {
			return bad(key, "%s is negative", d)
		}
	}
	if c.Protocol != "" && !slices.Contains(clickhouseProtocols, c.Protocol) {
		return bad("protocol", "%q is not one of %s", c.Protocol, strings.Join(clickhouseProtocols, ", "))
	}
	if c.Compression != "" && !slices.Contains(clickhouseCompressions, c.Compression) {
		return bad("compression", "%q is not one of %s", c.Compression, strings.Join(clickhouseCompressions, ", "))
	}
	return nil
}

// String hides the password, so a logged or printed section never shows
// it.
func (c ClickHouse) String() string {
	pw := ""
	if c.Password != "" {
		pw = "***"
	}
	return fmt.Sprintf("{Addr:%s Protocol:%s Database:%s Username:%s Password:%s DialTimeout:%s QueryTimeout:%s MigrateTimeout:%s Cluster:%s Compression:%s}",
		c.Addr, c.Protocol, c.Database, c.Username, pw, c.DialTimeout, c.QueryTimeout, c.MigrateTimeout, c.Cluster, c.Compression)
}
