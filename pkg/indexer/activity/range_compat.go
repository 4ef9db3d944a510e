package activity

// TEMPORARY, to be deleted when the branches `decoder` (batch fetch in
// pkg/rpc) and `storage` (storage.WriteBlocks) are merged: this file lets
// the range activity build and run on today's single-height FetchBlock and
// WriteBlock. At the merge, BlockResult becomes rpc's batch result type,
// and fetcherFor/writer return the real implementations (rpc's batch
// fetch, the store's WriteBlocks); nothing else in range.go changes.

import (
	"context"

	"github.com/tideline-dev/tideline/pkg/chain"
	"github.com/tideline-dev/tideline/pkg/rpc"
	"github.com/tideline-dev/tideline/pkg/storage"
)

// BlockResult is one height of a batch fetch: its data, or why not.
type BlockResult struct {
	Height uint64
	Data   *chain.BlockData
	Err    error
}

// fetcherFor is the chain's batch fetcher: the client's own when it has
// one, else one FetchBlock per height (same checks, no batching).
func fetcherFor(c Chain) rangeFetcher {
	if f, ok := c.RPC.(rangeFetcher); ok {
		return f
	}
	return singleFetcher{c.RPC}
}

// writer is the store's bulk write when it has one, else one WriteBlock per
// block (each block's mark last; the blocks of a call are not one unit).
func (a *Activities) writer() rangeWriter {
	if w, ok := a.Store.(rangeWriter); ok {
		return w
	}
	return singleWriter{a.Store}
}

type singleFetcher struct{ c rpc.Client }

func (f singleFetcher) FetchBlocks(ctx context.Context, heights []uint64) []BlockResult {
	out := make([]BlockResult, len(heights))
	for i, h := range heights {
		d, err := rpc.FetchBlock(ctx, f.c, h)
		out[i] = BlockResult{Height: h, Data: d, Err: err}
	}
	return out
}

type singleWriter struct{ s storage.Store }

func (w singleWriter) WriteBlocks(ctx context.Context, chainID string, blocks []*chain.BlockData) error {
	for _, b := range blocks {
		if err := w.s.WriteBlock(ctx, chainID, b); err != nil {
			return err
		}
	}
	return nil
}
