package retention

import (
	"context"
	"time"

	"github.com/tideline-dev/tideline/pkg/storage"
)

// Store is what retention reads and writes (*storage.Retention): its
// pruned height and the aggregator's in chain_state, the age of the
// stored blocks, the database's pending mutations, and the deletions.
type Store interface {
	SaveState(ctx context.Context, chainID, key string, value uint64) error
	LoadState(ctx context.Context, chainID, key string) (uint64, bool, error)
	PruneRows(ctx context.Context, chainID string, height uint64) (storage.PruneResult, error)
	HighestBlockBefore(ctx context.Context, chainID string, from, to uint64, cutoff time.Time) (uint64, bool, error)
	PendingMutations(ctx context.Context) (uint64, error)
}

var _ Store = (*storage.Retention)(nil)
