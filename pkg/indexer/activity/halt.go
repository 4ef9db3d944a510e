package activity

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/chain"
)

// Writes held after a reorganisation deeper than the confirmation depth.
//
// The reorg check (reorg.go) compares the stored blocks of a window of
// confirmation_depth below a height with the node. When the node's chain
// differs from the stored one all the way down to the bottom of that
// window (or down to the chain's first height), no common ancestor is in
// reach. A chain does not reorganise below its confirmation depth in
// normal operation; a node that says so is far more often wrong (a replica
// resynced from another network with the same chain id, a broken
// database) than right, and rewriting the stored chain from it would
// replace good data with bad. So nothing is rewritten: the chain's writes
// in this process are held (indexer_chain_halted 1, an error log, every
// write of the chain fails with ErrTypeChainHalted and is retried), and
// the stored data stays as it was until one of two things happens:
//
//   - the node agrees with the stored chain again (its block at the lowest
//     differing height is the stored one; asked at most every
//     holdRecheck): writes resume by themselves;
//   - an operator decides the reorganisation is real, raises the chain's
//     confirmation_depth above its depth and restarts the worker: the
//     repair then reaches the common ancestor (docs/operations.md,
//     runbook "Chain halted").

// ErrTypeChainHalted is the application error type of a write refused
// because the chain's writes are held (see DeepReorgError).
const ErrTypeChainHalted = "ChainHalted"

// holdRecheck is how often a held chain asks the node whether it agrees
// with the stored chain again.
var holdRecheck = 10 * time.Second

// DeepReorgError says that the node's chain differs from the stored one
// down to the bottom of the reorg check's window, so the chain's writes
// are held.
type DeepReorgError struct {
	ChainID string
	// Height is the height whose write found it.
	Height uint64
	// Lowest is the lowest stored height found to differ from the node;
	// Stored is what is stored there.
	Lowest uint64
	Stored chain.StoredBlock
	// ConfirmationDepth is the window the check could reach.
	ConfirmationDepth uint64
}

func (e *DeepReorgError) Error() string {
	return fmt.Sprintf("chain %s: writing height %d: the node's chain differs from the stored one down to height %d, the bottom of the reorganisation check (confirmation_depth %d): a wrong or broken node, or a reorganisation deeper than confirmation_depth; the chain's writes are held and the stored data is left as it was",
		e.ChainID, e.Height, e.Lowest, e.ConfirmationDepth)
}

// holds is the per-process state of held chains.
type holds struct {
	mu     sync.Mutex
	chains map[string]*hold
}

type hold struct {
	cause   *DeepReorgError
	checked time.Time
}

// holdWrites holds the chain's writes for cause; a chain held already
// keeps its first cause.
func (a *Activities) holdWrites(cause *DeepReorgError) {
	a.held.mu.Lock()
	defer a.held.mu.Unlock()
	if a.held.chains == nil {
		a.held.chains = map[string]*hold{}
	}
	if _, ok := a.held.chains[cause.ChainID]; ok {
		return
	}
	a.held.chains[cause.ChainID] = &hold{cause: cause, checked: time.Now()}
	a.Metrics.DeepReorgs.WithLabelValues(cause.ChainID).Inc()
	a.Metrics.ChainHalted.WithLabelValues(cause.ChainID).Set(1)
	a.logger(cause.ChainID).Error("chain's writes held: the node's chain differs from the stored one deeper than confirmation_depth; stored data left as it was (runbook: Chain halted)",
		zap.Uint64("height", cause.Height), zap.Uint64("lowest_differing", cause.Lowest),
		zap.String("stored_hash", cause.Stored.Hash), zap.Uint64("confirmation_depth", cause.ConfirmationDepth))
}

// heldWrites returns the hold's error while the chain's writes are held,
// nil otherwise. At most every holdRecheck it asks the node for its block
// at the lowest differing height: when that is the stored block again,
// the hold ends.
func (a *Activities) heldWrites(ctx context.Context, chainID string, c Chain) error {
	a.held.mu.Lock()
	h, ok := a.held.chains[chainID]
	due := ok && time.Since(h.checked) >= holdRecheck
	if due {
		h.checked = time.Now()
	}
	a.held.mu.Unlock()
	if !ok {
		return nil
	}
	if due {
		d, err := c.RPC.BlockByHeight(ctx, h.cause.Lowest)
		if err == nil && d.Block.Hash == h.cause.Stored.Hash {
			a.held.mu.Lock()
			delete(a.held.chains, chainID)
			a.held.mu.Unlock()
			a.Metrics.ChainHalted.WithLabelValues(chainID).Set(0)
			a.logger(chainID).Warn("the node agrees with the stored chain again; the chain's writes resume",
				zap.Uint64("height", h.cause.Lowest), zap.String("hash", h.cause.Stored.Hash))
			return nil
		}
	}
	return h.cause
}

// isHeld tells whether err is a held chain's refusal.
func isHeld(err error) bool {
	var deep *DeepReorgError
	return errors.As(err, &deep)
}
