// Package tokenmeta is token metadata, a side job of every chain: it asks
// every token with a transfer for its name, symbol, decimals and total
// supply once, off the write path, from its own Schedule. Its Schedule,
// workflow, activity, input and result, options, metric and the store
// methods it needs are all here.
package tokenmeta

import (
	"time"

	sdkactivity "go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/rpc"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// ActivityName is the activity's name in histories (unchanged since the
// activity was a method of the indexer's Activities).
const ActivityName = "TokenMetadata"

// Job is one chain's token metadata.
type Job struct {
	ChainID string
	// StartHeight is the chain's first height: the walk starts there.
	StartHeight uint64
	Options     temporal.Options
	// RPC is the chain's client; it must make eth_call (rpc.Caller).
	RPC     rpc.Client
	Store   Store
	Metrics *Metrics // nil: not counted
	Log     *zap.Logger

	// seen is the watermark its last run read, for the delay metric.
	seen lastSeen
}

// Register registers the job's workflow and activity, under the names
// histories know them by.
func (j *Job) Register(r worker.Registry) {
	r.RegisterWorkflowWithOptions(j.Workflow, workflow.RegisterOptions{Name: temporal.TokenMetadataWorkflow})
	r.RegisterActivityWithOptions(j.TokenMetadata, sdkactivity.RegisterOptions{Name: ActivityName})
}

// Interval is how often the Schedule runs it, as often as HeadScan: a
// token's metadata is stored within Interval of its first transfer
// reaching the watermark, plus the time its run takes to ask the tokens
// before it (four eth_calls each, metadataConcurrency at once), when the
// job keeps up (indexer_token_metadata_height near the watermark). A run
// with nothing new reads two chain_state keys and returns.
const Interval = 10 * time.Second

// Budget is how long one activity attempt works before it returns with
// its progress saved; the next run goes on.
const Budget = 2 * time.Minute

// Schedule is the Schedule that runs the chain's TokenMetadata workflow
// every Interval, overlap skip as for the aggregator.
func Schedule(o temporal.Options) temporal.PeriodicWorkflow {
	p := o.ScanSchedule(temporal.TokenMetadataScheduleID(o.ChainID), temporal.TokenMetadataWorkflowID(o.ChainID), temporal.TokenMetadataWorkflow,
		"token metadata", Interval, string(types.IndexModeTokenMetadata), Input{ChainID: o.ChainID})
	p.Timeout = 10 * time.Minute
	return p
}

// activityOptions are for its activity on the admin queue: it heartbeats
// after every token, and is retried (the aggregator's retry settings,
// retry.aggregate) until the run's timeout; a failure costs nothing
// saved, since every token is stored as it is answered.
func activityOptions(o temporal.Options) workflow.ActivityOptions {
	return o.JobActivity(2*Budget, time.Minute, o.Retry.Aggregate)
}
