// Package rpc reads chains. Client is what the indexer needs from a node;
// each chain family has an adapter (ethereum.go for Ethereum JSON-RPC).
package rpc

import (
	"context"

	"github.com/tideline-dev/tideline/pkg/chaindata"
)

// Client reads one chain. Implementations retry transient failures
// themselves and return typed errors (see errors.go) for everything else.
type Client interface {
	// HeadHeight returns the height of the newest block the node has.
	HeadHeight(ctx context.Context) (uint64, error)
	// BlockByHeight returns the block with its full transactions (receipt
	// fields left zero) or ErrBlockNotFound if the node does not have it.
	BlockByHeight(ctx context.Context, height uint64) (*chaindata.BlockData, error)
	// Receipts returns the receipts of the block with the given hash:
	// it fills the receipt fields of data.Transactions and data.Logs.
	Receipts(ctx context.Context, data *chaindata.BlockData) error
	// Close releases connections.
	Close()
}

// FetchBlock reads one height completely: header, transactions, receipts
// and logs, and with tracing on its call traces, checked for consistency.
func FetchBlock(ctx context.Context, c Client, height uint64) (*chaindata.BlockData, error) {
	data, err := c.BlockByHeight(ctx, height)
	if err != nil {
		return nil, err
	}
	if err := Complete(ctx, c, data); err != nil {
		return nil, err
	}
	return data, nil
}

// Complete adds to a block read by BlockByHeight what FetchBlock adds:
// its receipts and, when c traces, its traces.
func Complete(ctx context.Context, c Client, data *chaindata.BlockData) error {
	if err := c.Receipts(ctx, data); err != nil {
		return err
	}
	if t, ok := c.(Tracer); ok && t.TraceMode() != TracesOff {
		return t.Traces(ctx, data)
	}
	return nil
}
