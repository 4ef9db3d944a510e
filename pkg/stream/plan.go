package stream

import (
	"context"

	"github.com/tideline-dev/tideline/pkg/storage"
)

// plan returns the events of one step, numbered after a.seq: the
// removals down to the fork (if the stored chain forked below the
// streamed tip), then additions up to wm. Nothing is appended past a
// height whose canonical block is not stored (a reorg repair under way)
// or, with CheckParents, whose parent is not the block below it.
func (a *Appender) plan(ctx context.Context, wm uint64) ([]storage.StreamEvent, error) {
	var events []storage.StreamEvent
	seq, next := a.seq, a.next
	fork, forked, ready, err := a.findFork(ctx)
	if err != nil || !ready {
		return nil, err
	}
	if forked {
		for n := next - 1; ; n-- {
			old, err := a.streamedBlock(ctx, n)
			if err != nil {
				return nil, err
			}
			seq++
			events = append(events, storage.StreamEvent{Seq: seq, Kind: storage.StreamRemoved,
				Number: n, Hash: old.Hash, ParentHash: old.ParentHash, Timestamp: old.Timestamp})
			if n == fork {
				break
			}
		}
		next = fork
	}
	room := a.MaxBatch - len(events)
	if room <= 0 || wm < next {
		return events, nil
	}
	hi := min(wm, next+uint64(room)-1)
	headers, err := a.Store.BlockHeaders(ctx, a.ChainID, next, hi)
	if err != nil {
		return nil, err
	}
	var parent string
	if next > a.Start {
		below, err := a.streamedBlock(ctx, next-1)
		if err != nil {
			return nil, err
		}
		parent = below.Hash
	}
	for _, h := range headers {
		if h.Number != next {
			break // not stored as canonical yet (a repair under way)
		}
		if a.CheckParents && next > a.Start && h.ParentHash != parent {
			break // the repair has not reached it yet
		}
		seq++
		events = append(events, storage.StreamEvent{Seq: seq, Kind: storage.StreamAdded,
			Number: h.Number, Hash: h.Hash, ParentHash: h.ParentHash, Timestamp: h.Timestamp})
		parent, next = h.Hash, next+1
	}
	return events, nil
}

// findFork returns the lowest streamed height whose block is no longer
// the stored canonical one, looking first within Window of the tip and,
// when the fork is at the window's floor and the canonical block there
// does not sit on the streamed one below, further down. ready is false
// when nothing can be decided now: a streamed height has no canonical
// block stored at the moment, or the stored chain does not link up where
// the streamed one leaves it (a reorg repair under way in both cases).
func (a *Appender) findFork(ctx context.Context) (fork uint64, forked, ready bool, err error) {
	if a.next == a.Start {
		return 0, false, true, nil
	}
	top := a.next - 1
	depth := max(a.Window, 1)
	lo := top - min(depth-1, top-a.Start)
	below := false // looking under a window whose floor differed
	for {
		n, differs, ready, err := a.firstDifference(ctx, lo, top)
		if err != nil || !ready {
			return 0, false, false, err
		}
		if !differs {
			// Above the floor of the window looked at last, the stored
			// chain does not sit on this one yet.
			return 0, false, !below, nil
		}
		if n > lo || n == a.Start {
			return n, true, true, nil
		}
		if !a.CheckParents {
			return n, true, true, nil
		}
		c, err := a.Store.BlockHeaders(ctx, a.ChainID, n, n)
		if err != nil {
			return 0, false, false, err
		}
		under, err := a.streamedBlock(ctx, n-1)
		if err != nil {
			return 0, false, false, err
		}
		if len(c) == 1 && c[0].ParentHash == under.Hash {
			return n, true, true, nil
		}
		below = true
		depth *= 2
		top = lo - 1
		lo = top - min(depth-1, top-a.Start)
	}
}

// firstDifference returns the lowest height of [lo, top] whose streamed
// block is not the stored canonical one; ready is false if one of them
// has no canonical block stored.
func (a *Appender) firstDifference(ctx context.Context, lo, top uint64) (n uint64, differs, ready bool, err error) {
	headers, err := a.Store.BlockHeaders(ctx, a.ChainID, lo, top)
	if err != nil {
		return 0, false, false, err
	}
	canon := make(map[uint64]string, len(headers))
	for _, h := range headers {
		canon[h.Number] = h.Hash
	}
	for n := lo; n <= top; n++ {
		s, err := a.streamedBlock(ctx, n)
		if err != nil {
			return 0, false, false, err
		}
		hash, ok := canon[n]
		if !ok {
			return 0, false, false, nil
		}
		if hash != s.Hash {
			return n, true, true, nil
		}
	}
	return 0, false, true, nil
}
