package storage

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/config"
)

// Defaults for the zero durations of config.ClickHouse.
const (
	DefaultDialTimeout    = 10 * time.Second
	DefaultQueryTimeout   = 30 * time.Second
	DefaultMigrateTimeout = 24 * time.Hour
)

// withDefaults fills the zero durations of the clickhouse section (the
// one config type, config.ClickHouse, which also validates itself).
func withDefaults(c config.ClickHouse) config.ClickHouse {
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
func Open(ctx context.Context, cfg config.ClickHouse, logger *zap.Logger) (*ClickHouse, error) {
	d, err := open(ctx, cfg, logger, true)
	if err != nil {
		return nil, err
	}
	return &ClickHouse{db: d}, nil
}

// Reader is the read-only view of the same connection, for a process that
// both indexes and serves the query API (the dev stack, tests, benches).
func (c *ClickHouse) Reader() *Reader { return &Reader{c.db} }
