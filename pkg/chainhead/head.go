// Package chainhead owns a chain's head in a process: what the node
// reports, confirmed by its block before it is believed, and remembered.
package chainhead

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/rpc"
)

// Node is what the head is read from: an rpc.Client (a chain's rpc.Multi,
// which has already judged its endpoints' heads against each other, and
// retries).
type Node interface {
	HeadHeight(ctx context.Context) (uint64, error)
	BlockByHeight(ctx context.Context, height uint64) (*chaindata.BlockData, error)
}

// Head is the highest height this process knows the chain has a block at:
// a head Confirm confirmed, or a block the indexer fetched (Saw). Every
// scan turns a head into work (IndexBlock workflows, a scheduler's range),
// so one wrong answer must not commit the indexer to heights that do not
// exist: a load-balanced provider may answer once from a node of another
// network or a broken replica, and a range 10,000,000 heights too high
// would hold the live heights hostage. So a head above the known one is
// believed only once the node returns its block. It only grows: a
// reorganisation lowers the real head by a few blocks at most, so a height
// far below a head seen once stays far. Its zero value knows no head; it
// is safe for concurrent use.
type Head struct {
	mu    sync.Mutex
	head  uint64
	known bool
}

// Reading is one answer of Confirm.
type Reading struct {
	// Head is the head to use: the node's, or the known one when the
	// node's could not be confirmed.
	Head uint64
	// Unconfirmed is the head the node reported and could not show a
	// block for (0: none), which the caller counts and logs.
	Unconfirmed uint64
}

// UnconfirmedError is a head above the known one, or with none known,
// whose block the node could not return; Err is the last fetch's error
// (rpc.ErrBlockNotFound when the node answered that it has no such block).
type UnconfirmedError struct {
	Head uint64
	Err  error
}

func (e *UnconfirmedError) Error() string { return e.What() + ": " + e.Err.Error() }

// What says what failed without the cause, for an error that carries the
// cause apart (a Temporal application error).
func (e *UnconfirmedError) What() string {
	if errors.Is(e.Err, rpc.ErrBlockNotFound) {
		return fmt.Sprintf("head %d not confirmed (no block at that height)", e.Head)
	}
	return fmt.Sprintf("confirming head %d", e.Head)
}

func (e *UnconfirmedError) Unwrap() error { return e.Err }

// confirmTries is how many times a head's block is asked for before the
// head counts as unconfirmed. Behind a load balancer whose replicas are
// not all at the head, one request for the block may land on a replica
// that lacks it: with round robin over two replicas, the head and its
// block would always be answered by different ones, and a single try
// would never confirm a head while one replica lags.
const confirmTries = 3

// Confirm reads the node's head. A head at or below the known one is used
// as reported. A head above it is confirmed first (one block fetch per new
// head, which the indexer fetches anyway) and becomes the known head. A
// head the node has no block for is not used: the reading carries the
// known head and the rejected one in Unconfirmed, or, with no head known,
// the rejected one with an *UnconfirmedError. A failed fetch of the head's
// block is an *UnconfirmedError too (Unconfirmed 0: the node did not say
// it lacks the block); a failed read of the head is returned as is.
func (h *Head) Confirm(ctx context.Context, node Node) (Reading, error) {
	reported, err := node.HeadHeight(ctx)
	if err != nil {
		return Reading{}, err
	}
	known, ok := h.Known()
	if ok && reported <= known {
		return Reading{Head: reported}, nil
	}
	// pkg/rpc does not retry a block not found (an answer, not a failure),
	// and one lagging replica must not fail the scan for Temporal to retry:
	// so this loop is the one place a missing block is asked again.
	for range confirmTries {
		if _, err = node.BlockByHeight(ctx, reported); !errors.Is(err, rpc.ErrBlockNotFound) {
			break
		}
	}
	switch {
	case errors.Is(err, rpc.ErrBlockNotFound) && ok:
		return Reading{Head: known, Unconfirmed: reported}, nil
	case errors.Is(err, rpc.ErrBlockNotFound):
		return Reading{Unconfirmed: reported}, &UnconfirmedError{Head: reported, Err: err}
	case err != nil:
		return Reading{}, &UnconfirmedError{Head: reported, Err: err}
	}
	h.Saw(reported)
	return Reading{Head: reported}, nil
}

// Known returns the highest height known to have a block; false when
// none is known yet.
func (h *Head) Known() (uint64, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.head, h.known
}

// Saw records that height has a block (it was fetched from the node), so
// the known head is at least height.
func (h *Head) Saw(height uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.known || height > h.head {
		h.head, h.known = height, true
	}
}
