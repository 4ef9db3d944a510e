package simchain

import (
	"encoding/hex"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// chain is the time-dependent part of the simulation: where the head is,
// which fork epoch each height belongs to, which heights are poisoned. The
// blocks themselves are computed on demand (gen.go).
//
// The mutable state is an immutable snapshot behind an atomic pointer: the
// hot path (every request) only loads it, and the rare changes (reorg,
// jump, poison) copy it under mu.
type chain struct {
	cfg     Config
	now     func() time.Time
	start   time.Time // the clock when the chain started
	genesis int64     // unix ns of block 0: start - Length·BlockTime
	pools   *pools

	mu    sync.Mutex // serializes writers of state
	state atomic.Pointer[chainState]
}

type chainState struct {
	// reorgs in the order they happened; reorg i (1-based) made epoch i the
	// canonical one above its fork height.
	reorgs []reorgPoint
	// jumpHead is the head set by the last Jump; the head never goes below
	// it (and grows past it with time).
	jumpHead uint64
	poisoned map[uint64]bool
}

type reorgPoint struct {
	fork  uint64 // the highest height both forks share
	epoch uint32
}

func newChain(cfg Config) *chain {
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	c := &chain{cfg: cfg, now: now, pools: newPools(cfg.Seed)}
	c.start = now()
	c.genesis = c.start.UnixNano() - int64(cfg.Length)*int64(cfg.BlockTime)
	c.state.Store(&chainState{jumpHead: cfg.Length})
	return c
}

// view is one consistent look at the chain: a request takes one, so that
// all calls of a batch see the same head and forks.
type view struct {
	c    *chain
	st   *chainState
	head uint64
}

func (c *chain) view() view {
	st := c.state.Load()
	return view{c: c, st: st, head: c.headAt(st, c.now())}
}

func (c *chain) headAt(st *chainState, now time.Time) uint64 {
	h := c.cfg.Length
	if d := now.Sub(c.start); d > 0 {
		h += uint64(d / c.cfg.BlockTime)
	}
	return min(max(h, st.jumpHead), maxHeight-1)
}

// epoch is the fork epoch of the canonical block at height h.
func (st *chainState) epoch(h uint64) uint32 {
	var ep uint32
	for _, r := range st.reorgs {
		if h > r.fork {
			ep = r.epoch
		}
	}
	return ep
}

// timestamp of block h in unix seconds: the head at start is "now", older
// blocks are BlockTime apart. Blocks a Jump put ahead of the clock have
// future timestamps until the clock catches up.
func (c *chain) timestamp(h uint64) uint64 {
	ns := c.genesis + int64(h)*int64(c.cfg.BlockTime)
	if ns < 0 {
		return 0
	}
	return uint64(ns / int64(time.Second))
}

// reorg replaces the newest depth blocks (and everything after them) with
// a new fork epoch and returns the fork height (the last unchanged block).
func (c *chain) reorg(depth uint64) (uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.state.Load()
	head := c.headAt(old, c.now())
	if depth == 0 || depth > head {
		return 0, fmt.Errorf("simchain: reorg depth %d: must be in 1..%d (the head)", depth, head)
	}
	if len(old.reorgs)+1 >= maxEpoch {
		return 0, fmt.Errorf("simchain: reorg: more than %d reorgs", maxEpoch-1)
	}
	st := *old
	st.reorgs = append(append([]reorgPoint(nil), old.reorgs...),
		reorgPoint{fork: head - depth, epoch: uint32(len(old.reorgs) + 1)})
	c.state.Store(&st)
	return head - depth, nil
}

// jump moves the head n blocks ahead at once and returns the new head.
func (c *chain) jump(n uint64) (uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.state.Load()
	head := c.headAt(old, c.now())
	if n == 0 || head+n >= maxHeight {
		return 0, fmt.Errorf("simchain: jump of %d blocks from head %d: must be positive and stay below %d", n, head, uint64(maxHeight))
	}
	st := *old
	st.jumpHead = head + n
	c.state.Store(&st)
	return st.jumpHead, nil
}

// setPoisoned marks heights whose block and receipts answers are malformed
// (on = true) or heals them.
func (c *chain) setPoisoned(on bool, heights ...uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.state.Load()
	st := *old
	st.poisoned = make(map[uint64]bool, len(old.poisoned)+len(heights))
	for h := range old.poisoned {
		st.poisoned[h] = true
	}
	for _, h := range heights {
		if on {
			st.poisoned[h] = true
		} else {
			delete(st.poisoned, h)
		}
	}
	c.state.Store(&st)
}

// blockHash of the canonical block at h in the view (zero below 0).
func (v view) blockHash(dst *[32]byte, h uint64) {
	blockHashOf(dst, v.c.cfg.Seed, v.st.epoch(h), h)
}

// canonicalBlock finds the height of a block hash; ok is false for hashes
// of no block, of blocks replaced by a reorg, or above the head.
func (v view) canonicalBlock(hash *[32]byte) (uint64, bool) {
	h, ep, ok := readID(hash, v.c.cfg.Seed, domBlockHash)
	if !ok || h > v.head || ep >= maxEpoch || v.st.epoch(h) != uint32(ep) {
		return 0, false
	}
	return h, true
}

// canonicalTx finds the block height and index of a transaction hash.
func (v view) canonicalTx(hash *[32]byte) (h uint64, i int, ok bool) {
	h, rest, ok := readID(hash, v.c.cfg.Seed, domTxHash)
	ep, idx := uint32(rest>>24), int(rest&(1<<24-1))
	if !ok || h > v.head || v.st.epoch(h) != ep || idx >= v.c.cfg.TxsPerBlock {
		return 0, 0, false
	}
	return h, idx, true
}

func hexHash(b [32]byte) string { return "0x" + hex.EncodeToString(b[:]) }
