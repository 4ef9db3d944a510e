// Package workflow holds the indexer's workflows, one file each: HeadScan
// (the periodic head check), IndexBlock (one height), IndexRange (a range
// of backlog heights), and the catch-up Scheduler and GapScan. Workflows are deterministic: all I/O goes through
// activities (pkg/indexer/activity), all time through the SDK.
package workflow

import (
	"time"

	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/indexer/activity"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// a refers to activity methods for type-checked calls; it is never
// dereferenced (the worker registers the real instance).
var a *activity.Activities

// Workflows are the workflows of one chain, registered on that chain's
// task queues only. Its settings come from the worker's config, never
// from workflow inputs, so inputs carry no secrets; the chain ID an input
// carries names the chain in the history and the Web UI.
type Workflows struct {
	Chain ChainSetup
}

// ChainSetup is what the workflows know of one chain: its settings, and the
// Temporal options built from them once by the worker.
type ChainSetup struct {
	Settings Settings
	Options  temporal.Options
}

// Settings are the chain settings the workflows read (config.Chain's
// parts that steer scheduling).
type Settings struct {
	StartHeight uint64
	// BlockTime is the nominal block time: a height's age, hence its
	// priority level, is its distance below the head times BlockTime.
	BlockTime time.Duration
	HeadScan  config.HeadScan
	Scheduler config.Scheduler
	// RangeTimeout and RangeHeartbeat are the IndexRange activity's
	// start-to-close and heartbeat timeouts (index.range_timeout,
	// index.range_heartbeat).
	RangeTimeout   time.Duration
	RangeHeartbeat time.Duration
}

// NewChainSetup is the ChainSetup of a configured chain with its Temporal
// options.
func NewChainSetup(o temporal.Options, ch config.Chain) ChainSetup {
	return ChainSetup{
		Settings: Settings{
			StartHeight: ch.StartHeight,
			BlockTime:   ch.BlockTime,
			HeadScan:    ch.HeadScan,
			Scheduler:   ch.Scheduler,

			RangeTimeout:   ch.Index.RangeTimeout,
			RangeHeartbeat: ch.Index.RangeHeartbeat,
		},
		Options: o,
	}
}
