package aggregate

import (
	"context"

	"github.com/tideline-dev/tideline/pkg/storage"
)

// Store is what the aggregator reads and writes (*storage.Aggregates):
// the canonical blocks' counts, its rows, and its saved height in
// chain_state (storage.StateAggregatorHeight).
type Store interface {
	BlockCounts(ctx context.Context, chainID string, from, to uint64) ([]storage.BlockCount, error)
	AggregateRows(ctx context.Context, chainID string, from, to uint64) ([]storage.AggregateRow, error)
	LastAggregate(ctx context.Context, chainID string) (storage.AggregateRow, bool, error)
	WriteAggregates(ctx context.Context, chainID string, rows []storage.AggregateRow) error
	SaveState(ctx context.Context, chainID, key string, value uint64) error
	LoadState(ctx context.Context, chainID, key string) (uint64, bool, error)
}

var _ Store = (*storage.Aggregates)(nil)
