package activity

// TEMPORARY, to be deleted when the branch `storage` (storage.WriteBlocks)
// is merged: this file lets the range activity build and run on today's
// single-height WriteBlock. Once the store has WriteBlocks, writer returns
// it and the fallback below is dead code (it compiles either way, so the
// merge does not break the build); delete the file and return a.Store.

import (
	"context"
	"fmt"

	"github.com/tideline-dev/tideline/pkg/chain"
)

// blockWriter is today's single-height write.
type blockWriter interface {
	WriteBlock(ctx context.Context, chainID string, data *chain.BlockData) error
}

// writer is the store's bulk write when it has one, else one WriteBlock per
// block (each block's mark last; the blocks of a call are not one unit).
func (a *Activities) writer() rangeWriter {
	switch s := a.Store.(type) {
	case rangeWriter:
		return s
	case blockWriter:
		return singleWriter{s}
	}
	return noWriter{}
}

type singleWriter struct{ s blockWriter }

func (w singleWriter) WriteBlocks(ctx context.Context, chainID string, blocks []*chain.BlockData) error {
	for _, b := range blocks {
		if err := w.s.WriteBlock(ctx, chainID, b); err != nil {
			return err
		}
	}
	return nil
}

type noWriter struct{}

func (noWriter) WriteBlocks(context.Context, string, []*chain.BlockData) error {
	return fmt.Errorf("storage: the store can write neither one block nor many")
}
