// Package activity holds the indexer's activities: every piece of I/O a
// workflow needs (node, database, Temporal API). Activities are methods on
// one struct whose dependencies are filled in by app/indexer; workflows call
// them through a nil *Activities so references are type-checked.
package activity

import (
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/metrics"
	"github.com/tideline-dev/tideline/pkg/rpc"
	"github.com/tideline-dev/tideline/pkg/storage"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// Chain is what the activities need of one followed chain: its client,
// its Temporal options, and the settings the activities read.
type Chain struct {
	RPC         rpc.Client
	Options     temporal.Options
	StartHeight uint64
	// ConfirmationDepth is how far below the head a write is checked for a
	// reorganisation (0: never).
	ConfirmationDepth int
	// PushLagThreshold is push.lag_threshold (see types.PushStatus).
	PushLagThreshold uint64
	// Range tunes the IndexRange activity.
	Range RangeSettings
	// AggregatorChunk is aggregator.chunk: heights per read and insert.
	AggregatorChunk int
	// Retention is the chain's retention (retention.*), and
	// RetentionMargin the heights below the watermark it never prunes
	// (config.Chain.RetentionMargin).
	Retention       config.Retention
	RetentionMargin uint64
}

// NewChain is the Chain of a configured chain, with its Temporal options
// (built once by the worker).
func NewChain(client rpc.Client, o temporal.Options, ch config.Chain) Chain {
	return Chain{
		RPC: client, Options: o, StartHeight: ch.StartHeight,
		ConfirmationDepth: ch.ConfirmationDepth, PushLagThreshold: ch.Push.LagThreshold,
		Range: RangeSettings{
			FetchBatch: ch.Index.FetchBatch, FetchConcurrency: ch.Index.FetchConcurrency, WriteBatch: ch.Index.WriteBatch,
		},
		AggregatorChunk: ch.Aggregator.Chunk,
		Retention:       ch.Retention, RetentionMargin: ch.RetentionMargin(),
	}
}

// Activities is the set of the indexer's activities.
type Activities struct {
	Chains   map[string]Chain
	Store    storage.Store
	Temporal client.Client
	Metrics  *metrics.Metrics
	Log      *zap.Logger
	// Push holds the push source of each chain that has one in this
	// process; nil or absent means pull only. Set before the workers
	// start, read-only afterwards.
	Push map[string]PushSource

	reorg reorgTracker
	heads headGuard
	held  holds
}

func (a *Activities) chain(chainID string) (Chain, error) {
	c, ok := a.Chains[chainID]
	if !ok {
		return Chain{}, UnknownChain(chainID)
	}
	return c, nil
}

// logger returns the activity logger with the chain named.
func (a *Activities) logger(chainID string) *zap.Logger {
	return a.Log.With(zap.String("chain_id", chainID))
}
