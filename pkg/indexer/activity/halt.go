package activity

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/chaindata"
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
	Stored chaindata.StoredBlock
	// ConfirmationDepth is the window the check could reach.
	ConfirmationDepth uint64
}

func (e *DeepReorgError) Error() string {
	return fmt.Sprintf("chain %s: writing height %d: the node's chain differs from the stored one down to height %d, the bottom of the reorganisation check (confirmation_depth %d): a wrong or broken node, or a reorganisation deeper than confirmation_depth; the chain's writes are held and the stored data is left as it was",
		e.ChainID, e.Height, e.Lowest, e.ConfirmationDepth)
}

// holds is whether the chain's writes are held in this process, and why.
type holds struct {
	mu      sync.Mutex
	cause   *DeepReorgError // nil: not held
	checked time.Time       // when the node was last asked
}

// holdWrites holds the chain's writes for cause; a chain held already
// keeps its first cause.
func (a *Activities) holdWrites(cause *DeepReorgError) {
	a.held.mu.Lock()
	defer a.held.mu.Unlock()
	if a.held.cause != nil {
		return
	}
	a.held.cause, a.held.checked = cause, time.Now()
	a.Metrics.DeepReorgs.WithLabelValues(a.Chain.ID).Inc()
	a.Metrics.ChainHalted.WithLabelValues(a.Chain.ID).Set(1)
	a.logger().Error("chain's writes held: the node's chain differs from the stored one deeper than confirmation_depth; stored data left as it was (runbook: Chain halted)",
		zap.Uint64("height", cause.Height), zap.Uint64("lowest_differing", cause.Lowest),
		zap.String("stored_hash", cause.Stored.Hash), zap.Uint64("confirmation_depth", cause.ConfirmationDepth))
}

// heldWrites returns the hold's error while the chain's writes are held,
// nil otherwise. At most every holdRecheck it asks the node for its block
// at the lowest differing height: when that is the stored block again,
// the hold ends.
func (a *Activities) heldWrites(ctx context.Context) error {
	a.held.mu.Lock()
	cause := a.held.cause
	due := cause != nil && time.Since(a.held.checked) >= holdRecheck
	if due {
		a.held.checked = time.Now()
	}
	a.held.mu.Unlock()
	if cause == nil {
		return nil
	}
	if due {
		d, err := a.Chain.RPC.BlockByHeight(ctx, cause.Lowest)
		if err == nil && d.Block.Hash == cause.Stored.Hash {
			a.held.mu.Lock()
			a.held.cause = nil
			a.held.mu.Unlock()
			a.Metrics.ChainHalted.WithLabelValues(a.Chain.ID).Set(0)
			a.logger().Warn("the node agrees with the stored chain again; the chain's writes resume",
				zap.Uint64("height", cause.Lowest), zap.String("hash", cause.Stored.Hash))
			return nil
		}
	}
	return cause
}

// isHeld tells whether err is a held chain's refusal.
func isHeld(err error) bool {
	var deep *DeepReorgError
	return errors.As(err, &deep)
}
