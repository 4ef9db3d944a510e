package storage

import (
	"context"

	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/config"
)

// Reader is the query API's store (pkg/api): reads only. It has no write
// method and needs none of the server: it may run as a ClickHouse user
// with `readonly = 1` (docs/querying.md). Its reads are in read.go,
// read_blocks.go and read_txs.go, their statements in read_queries.go.
type Reader struct {
	*db
}

// OpenReader connects to an existing database to read it. Unlike Open it
// creates nothing and asks nothing of the server beyond the connection,
// so a read-only user can open it.
func OpenReader(ctx context.Context, cfg config.ClickHouse, logger *zap.Logger) (*Reader, error) {
	d, err := open(ctx, cfg, logger, false)
	if err != nil {
		return nil, err
	}
	return &Reader{d}, nil
}
