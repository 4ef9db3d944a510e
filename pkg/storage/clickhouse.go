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

// ClickHouse is the indexer's handle on a ClickHouse server and its
// indexing path's store: the one write path (WriteBlocks, RemoveBlock,
// StoredBlocks), the progress questions and per-chain state (Progress,
// embedded) and the migrations. Everything else is a view of the same
// connection with the handful of methods one consumer needs (views.go):
// Records, Aggregates, Retention, Tokens, Traces, Stream, and the query
// API's Reader, which has no write method. It is safe for concurrent use:
// the driver pools connections.
type ClickHouse struct {
	*db
	Progress
}

// Open connects over the configured protocol and creates the database if it
// does not exist. It does not migrate; call Migrate.
func Open(ctx context.Context, cfg config.ClickHouse, logger *zap.Logger) (*ClickHouse, error) {
	d, err := open(ctx, cfg, logger, true)
	if err != nil {
		return nil, err
	}
	return &ClickHouse{db: d, Progress: Progress{d}}, nil
}

// Close releases the connections of every view.
func (c *ClickHouse) Close() error { return c.close() }
