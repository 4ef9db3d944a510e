package chainhead

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/rpc"
)

// node is a chain whose blocks are 0..tip; it reports head, which a test
// sets above tip for a phantom head. The real path (a proxy lying on a
// node's behalf) is test/integration's TestPhantomHeadDoesNotWedgeTheChain; these are the
// rules alone.
type node struct {
	head, tip uint64
	failing   error // BlockByHeight's error other than not found
	fetches   int
}

func (n *node) HeadHeight(context.Context) (uint64, error) { return n.head, nil }

func (n *node) BlockByHeight(_ context.Context, h uint64) (*chaindata.BlockData, error) {
	n.fetches++
	if n.failing != nil {
		return nil, n.failing
	}
	if h > n.tip {
		return nil, rpc.ErrBlockNotFound
	}
	return &chaindata.BlockData{}, nil
}

func TestConfirm(t *testing.T) {
	ctx := context.Background()
	var h Head
	_, known := h.Known()
	require.False(t, known, "a zero Head knows no head")

	// Nothing known: a head without a block is an error, after
	// confirmTries asks.
	n := &node{head: 100, tip: 90}
	r, err := h.Confirm(ctx, n)
	var ue *UnconfirmedError
	require.ErrorAs(t, err, &ue)
	require.ErrorIs(t, err, rpc.ErrBlockNotFound)
	require.Equal(t, uint64(100), ue.Head)
	require.Equal(t, uint64(100), r.Unconfirmed)
	require.Equal(t, confirmTries, n.fetches)

	// A head with its block is confirmed and known.
	n.head, n.fetches = 90, 0
	r, err = h.Confirm(ctx, n)
	require.NoError(t, err)
	require.Equal(t, Reading{Head: 90}, r)
	require.Equal(t, 1, n.fetches)

	// At or below the known head: used as reported, nothing fetched.
	n.head, n.fetches = 85, 0
	r, err = h.Confirm(ctx, n)
	require.NoError(t, err)
	require.Equal(t, Reading{Head: 85}, r)
	require.Zero(t, n.fetches)
	got, _ := h.Known()
	require.Equal(t, uint64(90), got, "the known head never goes down")

	// A phantom head above the known one: the known head is used, the
	// phantom reported.
	n.head = 10_000_000
	r, err = h.Confirm(ctx, n)
	require.NoError(t, err)
	require.Equal(t, Reading{Head: 90, Unconfirmed: 10_000_000}, r)

	// A failed fetch is an error even with a head known, and no phantom.
	n.head, n.failing = 95, errors.New("connection reset")
	r, err = h.Confirm(ctx, n)
	require.ErrorAs(t, err, &ue)
	require.NotErrorIs(t, err, rpc.ErrBlockNotFound)
	require.Equal(t, "confirming head 95", ue.What())
	require.Zero(t, r.Unconfirmed)

	// A block the indexer fetched raises the known head.
	h.Saw(120)
	h.Saw(110)
	got, _ = h.Known()
	require.Equal(t, uint64(120), got)
}
