// Package stream keeps each chain's change stream: an ordered log of
// "block added" and "block removed" events, numbered without a gap, of
// the heights at or below the watermark (README.md).
package stream

import (
	"context"
	"errors"
	"fmt"

	"github.com/tideline-dev/tideline/pkg/storage"
)

// Store is what the appender reads and writes (*storage.Stream).
type Store interface {
	StreamTail(ctx context.Context, chainID string, n int) ([]storage.StreamEvent, error)
	StreamedAt(ctx context.Context, chainID string, from, to uint64) (map[uint64]storage.StreamEvent, error)
	AppendStreamEvents(ctx context.Context, chainID string, events []storage.StreamEvent) error
	BlockHeaders(ctx context.Context, chainID string, from, to uint64) ([]storage.BlockHeader, error)
	// Watermark is the highest H >= from with every height of [from, H]
	// indexed; found is false when from itself is not.
	Watermark(ctx context.Context, chainID string, from uint64) (height uint64, found bool, err error)
}

// ErrBrokenLog is a stream log that contradicts itself (a height in the
// streamed chain without its added event): written by something other
// than an Appender.
var ErrBrokenLog = errors.New("the stream's log contradicts itself")

// Appender appends one chain's events. One runs per chain at a time (the
// stream's Temporal Schedule); it keeps the streamed chain's recent blocks
// in memory and reads them back from the log when it starts, so an
// appender goes on exactly where the last one stopped.
type Appender struct {
	Store   Store
	ChainID string
	// Start is the chain's first height: its added event has seq 1.
	Start uint64
	// Window is how far below the streamed tip a reorganisation is looked
	// for first (the chain's confirmation depth); a fork found at the
	// window's floor is followed further down.
	Window uint64
	// MaxBatch bounds the events one Step appends.
	MaxBatch int
	// CheckParents holds back a block whose parent is not the block
	// streamed below it until the indexer's reorg repair makes them agree.
	// Off for a chain whose reorg check is off (confirmation depth 0),
	// which is never repaired.
	CheckParents bool

	loaded   bool
	added    int // events of the last Step, by kind
	removed  int
	seq      uint64 // the last event's
	next     uint64 // the streamed chain is [Start, next-1]
	streamed map[uint64]storage.StreamEvent
}

// LastStep is how many added and removed events the last Step appended.
func (a *Appender) LastStep() (added, removed int) { return a.added, a.removed }

// Tip is the last appended seq and the next height the stream adds.
func (a *Appender) Tip() (seq, next uint64) { return a.seq, a.next }

// tailEvents is how many of the last events a starting appender reads:
// they normally hold the window's heights; a height they do not cover is
// read by its number.
func (a *Appender) tailEvents() int { return int(min(4*a.Window+64, 100_000)) }

func (a *Appender) load(ctx context.Context) error {
	tail, err := a.Store.StreamTail(ctx, a.ChainID, a.tailEvents())
	if err != nil {
		return err
	}
	a.streamed = map[uint64]storage.StreamEvent{}
	a.seq, a.next = 0, a.Start
	for _, e := range tail {
		a.apply(e)
	}
	a.loaded = true
	return nil
}

// apply moves the appender's view past one event.
func (a *Appender) apply(e storage.StreamEvent) {
	a.seq = e.Seq
	if e.Kind == storage.StreamAdded {
		a.streamed[e.Number] = e
		a.next = e.Number + 1
	} else {
		delete(a.streamed, e.Number)
		a.next = e.Number
	}
}

// streamedBlock is the streamed chain's block at height n, read back from
// the log if the memory does not hold it.
func (a *Appender) streamedBlock(ctx context.Context, n uint64) (storage.StreamEvent, error) {
	if e, ok := a.streamed[n]; ok {
		return e, nil
	}
	got, err := a.Store.StreamedAt(ctx, a.ChainID, n, n)
	if err != nil {
		return storage.StreamEvent{}, err
	}
	e, ok := got[n]
	if !ok || e.Kind != storage.StreamAdded {
		return storage.StreamEvent{}, fmt.Errorf("%w: height %d is below the streamed tip %d but its last event is %+v",
			ErrBrokenLog, n, a.next-1, e)
	}
	a.streamed[n] = e
	return e, nil
}

// Step appends what the stored chain says since the last step: removals
// of streamed blocks that are no longer canonical (newest first), then the
// canonical blocks above the fork up to the watermark, at most MaxBatch
// events in one insert. It returns how many it appended.
func (a *Appender) Step(ctx context.Context) (int, error) {
	if !a.loaded {
		if err := a.load(ctx); err != nil {
			return 0, fmt.Errorf("stream of chain %q: reading its last events: %w", a.ChainID, err)
		}
	}
	// Every streamed height is indexed (marks are never taken back), so
	// the watermark is looked for above the streamed chain only.
	wm, found, err := a.Store.Watermark(ctx, a.ChainID, a.next)
	if err != nil {
		return 0, fmt.Errorf("stream of chain %q: reading the watermark: %w", a.ChainID, err)
	}
	if !found {
		if a.next == a.Start {
			return 0, nil
		}
		wm = a.next - 1
	}
	a.added, a.removed = 0, 0
	events, err := a.plan(ctx, wm)
	if err != nil {
		return 0, fmt.Errorf("stream of chain %q: %w", a.ChainID, err)
	}
	if len(events) == 0 {
		return 0, nil
	}
	if err := a.Store.AppendStreamEvents(ctx, a.ChainID, events); err != nil {
		// Whether the insert landed is not known: read the log back
		// before the next step.
		a.loaded = false
		return 0, err
	}
	for _, e := range events {
		a.apply(e)
		if e.Kind == storage.StreamAdded {
			a.added++
		} else {
			a.removed++
		}
	}
	a.forget()
	return len(events), nil
}

// forget drops remembered blocks far below the tip.
func (a *Appender) forget() {
	if a.next < a.Start+2*a.Window+1 {
		return
	}
	floor := a.next - 2*a.Window - 1
	for n := range a.streamed {
		if n < floor {
			delete(a.streamed, n)
		}
	}
}

var _ Store = (*storage.Stream)(nil)
