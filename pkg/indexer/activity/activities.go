// Package activity holds the indexer's activities: every piece of I/O a
// workflow needs (node, database, Temporal API). Activities are methods on
// one struct per chain, built by the worker with that chain's client,
// options and settings and registered on that chain's task queues only;
// workflows call them through a nil *Activities so references are
// type-checked.
package activity

import (
	"context"

	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/chainhead"
	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/metrics"
	"github.com/tideline-dev/tideline/pkg/rpc"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// ChainSetup is what the activities need of their chain: its ID, its client,
// its Temporal options, and the settings the activities read.
type ChainSetup struct {
	ID          string
	RPC         rpc.Client
	Options     temporal.Options
	StartHeight uint64
	// ConfirmationDepth is how far below the head a write is checked for a
	// reorganisation (0: never).
	ConfirmationDepth int
	// PushLagThreshold is push.lag_threshold (see types.PushStatus).
	PushLagThreshold uint64
	// WriteBatch is index.write_batch: heights per bulk write of a range.
	WriteBatch int
	// WriteBatchRows is index.write_batch_rows: about how many rows a
	// range's chunk may hold (0: no bound), see range_chunks.go.
	WriteBatchRows int
	// BacklogConcurrency is index.backlog_concurrency: how many of the
	// backlog's single heights fetch and write at once (backlog.go).
	BacklogConcurrency int
	// Traces is true while the chain is indexed with its call traces (the
	// traces setting, auto resolved by the worker's probe): a height is
	// written only with them (traces.go).
	Traces bool
}

// NewChainSetup is the ChainSetup of a configured chain, with its client and its
// Temporal options (both built once by the worker).
func NewChainSetup(id string, client rpc.Client, o temporal.Options, ch config.Chain) ChainSetup {
	return ChainSetup{
		ID: id, RPC: client, Options: o, StartHeight: ch.StartHeight,
		ConfirmationDepth: ch.ConfirmationDepth, PushLagThreshold: ch.Push.LagThreshold,
		WriteBatch: ch.Index.WriteBatch, WriteBatchRows: ch.Index.WriteBatchRows,
		BacklogConcurrency: ch.Index.BacklogConcurrency,
		Traces:             ch.Traces.Enabled(),
	}
}

// Activities are the activities of one chain. Every activity serves this
// chain: the chain ID its input carries (kept so that the histories and
// the Web UI name the chain) is the worker's, because the chain's task
// queues are polled by its own Activities only.
type Activities struct {
	Chain    ChainSetup
	Store    Store
	Temporal client.Client
	Metrics  *metrics.Metrics
	Log      *zap.Logger
	// Push is the chain's push source in this process; nil means pull
	// only. Set before the workers start, read-only afterwards.
	Push PushSource
	// AfterRepair, when set, is told the fork point of every reorg repair
	// this process made (the aggregator's Rewind: its rows above the fork
	// counted orphaned blocks). It must not fail the repair: it logs.
	AfterRepair func(ctx context.Context, fork uint64, log *zap.Logger)

	heads   chainhead.Head // the head, shared by the scans and the reorg check (head.go)
	repairs repairTurns    // one reorg repair at a time (reorg.go)
	held    holds          // writes held after a deep reorganisation (halt.go)
	// backlog caps the backlog's single heights at once (backlog.go).
	backlog backlogTurns
	// rowsPerHeight is what the last chunk fetched by a range held per
	// height, shared by this process's ranges of the chain (range_chunks.go).
	rowsPerHeight rowsEstimate
	// stall is the watermark as this process's scans saw it (stall.go).
	stall stallWatch
	// poisoned are the heights this process names as poisoned (poisoned.go).
	poisoned poisonedHeights
}

// logger returns the activity logger with the chain named.
func (a *Activities) logger() *zap.Logger {
	return a.Log.With(zap.String("chain_id", a.Chain.ID))
}
