package activity

// TEMPORARY, to be deleted when the branch `storage` (storage.WriteBlocks)
// is merged: this file lets the range activity build and run on today's
// single-height WriteBlock. At the merge, writer returns the store itself
// (Store gains WriteBlocks); nothing else in range.go changes.

import (
	"context"

	"github.com/tideline-dev/tideline/pkg/chain"
	"github.com/tideline-dev/tideline/pkg/storage"
)

// writer is the store's bulk write when it has one, else one WriteBlock per
// block (each block's mark last; the blocks of a call are not one unit).
func (a *Activities) writer() rangeWriter {
	if w, ok := a.Store.(rangeWriter); ok {
		return w
	}
	return singleWriter{a.Store}
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
