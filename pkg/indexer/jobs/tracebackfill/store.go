package tracebackfill

import (
	"context"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/storage"
)

// Store is what the backfill reads and writes (*storage.Traces): its
// state in chain_state, the highest indexed height, the marks of the
// heights without traces, the stored blocks to trace, and the traces.
type Store interface {
	SaveState(ctx context.Context, chainID, key string, value uint64) error
	LastIndexed(ctx context.Context, chainID string) (height uint64, found bool, err error)
	UntracedHeights(ctx context.Context, chainID string, from, to uint64, limit int) ([]uint64, error)
	TraceTargets(ctx context.Context, chainID string, heights []uint64) (map[uint64]*chaindata.BlockData, error)
	WriteTraces(ctx context.Context, chainID string, blocks []*chaindata.BlockData) (skipped []uint64, err error)
	TraceBackfillState(ctx context.Context, chainID string) (storage.TraceBackfill, error)
}

var _ Store = (*storage.Traces)(nil)
