package activity

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/rpc"
)

// Reorganisations near the head.
//
// A block indexed within the chain's confirmation_depth of the head is not
// written blindly: the stored blocks around it (its window, confirmation
// depth on either side) are read first, with the new block laid over them,
// and the stored chain is checked for consistency:
//
//   - every stored block's parent hash equals the stored hash of the height
//     below (where both are stored);
//   - no stored block is a tombstone (a height the node did not have);
//   - the height itself does not hold another block.
//
// If all holds, the block is written as usual. Otherwise the heights from
// the lowest suspect up to the top of the window are compared with the
// node, then heights below it one by one until the stored block is the
// node's (the common ancestor; at most confirmation_depth below the block).
// Every height whose stored block is not the node's is re-indexed in place
// with WriteBlocks (the orphaned block's rows are replaced or superseded
// by tombstones), heights the node no longer has are removed, and the block
// itself is written last. The check reads only the stored window, so the
// repair also heals a late write of an orphaned block by another activity:
// the next block indexed near the head sees the broken link.
//
// Repairs of one chain in this process take turns, and each re-reads the
// window once it has its turn, so several heights that see the same
// reorganisation repair it once.

// nearHead tells whether height is within depth of the chain's head
// (pkg/chainhead, read and confirmed from the node the first time). When the
// head cannot be read it answers true: the check costs one query, a
// missed reorganisation costs orphaned rows. height's block was fetched
// from the node, so it raises the cached head.
func (a *Activities) nearHead(ctx context.Context, height, depth uint64) bool {
	head, ok := a.heads.Known()
	if !ok {
		h, err := a.head(ctx)
		if err != nil {
			return true
		}
		head = h
	}
	a.heads.Saw(height)
	head = max(head, height)
	return height+depth >= head
}

// repairTurns serialises the chain's repairs in this process: a 1-slot
// semaphore, so that a wait ends with the activity's context.
type repairTurns struct {
	once sync.Once
	turn chan struct{}
}

// repairTurn waits for the chain's repair turn; release gives it back.
func (a *Activities) repairTurn(ctx context.Context) (release func(), err error) {
	r := &a.repairs
	r.once.Do(func() { r.turn = make(chan struct{}, 1) })
	select {
	case r.turn <- struct{}{}:
		return func() { <-r.turn }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// storedView reads the stored blocks of [lo, hi], ascending.
func (a *Activities) storedView(ctx context.Context, lo, hi uint64) ([]chaindata.StoredBlock, error) {
	stored, err := a.Store.StoredBlocks(ctx, a.Chain.ID, lo, hi)
	if err != nil {
		return nil, writeErr(fmt.Errorf("read stored blocks [%d, %d]: %w", lo, hi, err))
	}
	return stored, nil
}

// firstSuspect returns the lowest height of the window whose stored block
// may be off the chain, with b (the block being written, taken as
// canonical) in place of the stored block at its height: a tombstone, a
// stored block at b's height other than b, or either side of a parent link
// that does not hold.
func firstSuspect(stored []chaindata.StoredBlock, b *chaindata.Block) (uint64, bool) {
	view := overlay(stored, b)
	for i, s := range view {
		if !s.Canonical {
			return s.Number, true
		}
		if s.Number == b.Number {
			if j, ok := slices.BinarySearchFunc(stored, b.Number, cmpNumber); ok && stored[j].Hash != b.Hash {
				return s.Number, true
			}
		}
		if i > 0 {
			p := view[i-1]
			if p.Number+1 == s.Number && s.ParentHash != p.Hash {
				return p.Number, true
			}
		}
	}
	return 0, false
}

func cmpNumber(s chaindata.StoredBlock, n uint64) int {
	switch {
	case s.Number < n:
		return -1
	case s.Number > n:
		return 1
	}
	return 0
}

// overlay returns stored with b in place of (or inserted at) its height.
func overlay(stored []chaindata.StoredBlock, b *chaindata.Block) []chaindata.StoredBlock {
	nb := chaindata.StoredBlock{Number: b.Number, Hash: b.Hash, ParentHash: b.ParentHash, Canonical: true}
	j, found := slices.BinarySearchFunc(stored, b.Number, cmpNumber)
	out := slices.Clone(stored)
	if found {
		out[j] = nb
		return out
	}
	return slices.Insert(out, j, nb)
}

// repair compares the stored blocks from the suspect `from` upwards, then
// below it down to the common ancestor (not below lo), with the node, and
// re-indexes every height whose stored block is not the node's. The block
// being indexed is written last. A nil result means nothing stored was off
// the chain (the suspect was a tombstone of a height the node still lacks).
func (a *Activities) repair(ctx context.Context, data *chaindata.BlockData, stored []chaindata.StoredBlock, from, lo uint64) (*types.ReorgResult, error) {
	c, chainID := a.Chain, a.Chain.ID
	n := data.Block.Number
	// The block being written must still be the node's: otherwise the
	// comparison below would be against a chain that moved on.
	now, err := c.RPC.BlockByHeight(ctx, n)
	if err != nil {
		return nil, fetchErr(fmt.Errorf("re-read block %d: %w", n, err))
	}
	if now.Block.Hash != data.Block.Hash {
		return nil, fetchErr(fmt.Errorf("block %d changed on the node from %s to %s while checking for a reorganisation", n, data.Block.Hash, now.Block.Hash))
	}

	// canonical[h] is the node's block at h, nil when the node lacks h.
	canonical := map[uint64]*chaindata.BlockData{}
	nodeBlock := func(h uint64) (*chaindata.BlockData, error) {
		d, err := c.RPC.BlockByHeight(ctx, h)
		if errors.Is(err, rpc.ErrBlockNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, fetchErr(fmt.Errorf("read block %d for the reorganisation check: %w", h, err))
		}
		canonical[h] = d
		return d, nil
	}
	var orphaned, removed []uint64
	// offChain compares one stored height with the node; matched is true
	// when the stored block is the node's.
	offChain := func(s chaindata.StoredBlock) (matched bool, err error) {
		d, err := nodeBlock(s.Number)
		if err != nil {
			return false, err
		}
		switch {
		case d == nil && s.Canonical:
			removed = append(removed, s.Number)
		case d == nil:
			// A tombstone of a height the node still lacks.
		case !s.Canonical || s.Hash != d.Block.Hash:
			orphaned = append(orphaned, s.Number)
		default:
			return true, nil
		}
		return false, nil
	}

	for _, s := range stored {
		if s.Number < from || s.Number == n {
			continue
		}
		if _, err := offChain(s); err != nil {
			return nil, err
		}
	}
	var (
		fork      uint64
		forkFound bool
	)
	for i := len(stored) - 1; i >= 0; i-- {
		s := stored[i]
		if s.Number >= from || s.Number < lo {
			continue
		}
		if s.Number == n {
			// Compared with the node already; a different block stored
			// here is handled below.
			if s.Canonical && s.Hash == data.Block.Hash {
				fork, forkFound = n, true
				break
			}
			continue
		}
		matched, err := offChain(s)
		if err != nil {
			return nil, err
		}
		if matched {
			fork, forkFound = s.Number, true
			break
		}
	}
	// The height being written had another block stored under it.
	if j, ok := slices.BinarySearchFunc(stored, n, cmpNumber); ok && (stored[j].Hash != data.Block.Hash || !stored[j].Canonical) {
		orphaned = append(orphaned, n)
	}

	slices.Sort(orphaned)
	slices.Sort(removed)
	lowest, highest := ^uint64(0), uint64(0)
	for _, hs := range [][]uint64{orphaned, removed} {
		if len(hs) > 0 {
			lowest, highest = min(lowest, hs[0]), max(highest, hs[len(hs)-1])
		}
	}
	// Differences down to the bottom of the window with no common
	// ancestor in it: hold the chain's writes instead (halt.go).
	if !(forkFound && fork < lowest) && lowest <= lo {
		j, _ := slices.BinarySearchFunc(stored, lowest, cmpNumber)
		return nil, &DeepReorgError{
			ChainID: chainID, Height: n, Lowest: lowest, Stored: stored[j],
			ConfirmationDepth: uint64(max(c.ConfirmationDepth, 0)),
		}
	}
	// The canonical blocks of the orphaned heights, complete, go in one
	// write: one write's fixed cost (the stored rows' read, an insert a
	// table) instead of one a height. One a height, a depth-20 repair on
	// a loaded box outlived the activity's deadline part-way, and its
	// retry found (and reported) only the heights not rewritten yet.
	var rewrite []*chaindata.BlockData
	for _, h := range orphaned {
		if h == n {
			continue
		}
		d := canonical[h]
		// Receipts, and traces when the chain traces.
		err := rpc.Complete(ctx, c.RPC, d)
		if err == nil {
			err = a.requireTraces(d)
		}
		if err != nil {
			return nil, fetchErr(fmt.Errorf("receipts of canonical block %d %s: %w", h, d.Block.Hash, err))
		}
		rewrite = append(rewrite, d)
	}
	if len(rewrite) > 0 {
		if err := a.Store.WriteBlocks(ctx, chainID, rewrite); err != nil {
			return nil, writeErr(err)
		}
	}
	for _, h := range removed {
		if err := a.Store.RemoveBlock(ctx, chainID, h); err != nil {
			return nil, writeErr(err)
		}
	}
	if err := a.Store.WriteBlocks(ctx, chainID, []*chaindata.BlockData{data}); err != nil {
		return nil, writeErr(err)
	}

	if len(orphaned) == 0 && len(removed) == 0 {
		return nil, nil
	}
	res := &types.ReorgResult{Reindexed: orphaned, Removed: removed}
	switch {
	case forkFound && fork < lowest:
		res.ForkPoint = fork
	case lowest > 0:
		// The heights between lowest and lo are holes: the fork is just
		// below the lowest orphan.
		res.ForkPoint = lowest - 1
	}
	res.Depth = highest - res.ForkPoint
	return res, nil
}
