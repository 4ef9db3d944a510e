package temporal

import (
	"time"

	"go.temporal.io/sdk/workflow"
)

// The TokenMetadata workflow (pkg/indexer/workflow/token_metadata.go):
// asks every token with a transfer for its name, symbol, decimals and
// total supply once, off the write path, from its own Schedule per chain.

// TokenMetadataWorkflow is its workflow type.
const TokenMetadataWorkflow = "TokenMetadata"

// TokenMetadataInterval is how often the Schedule runs it: new tokens get
// their metadata within about this long of their first transfer reaching
// the watermark.
const TokenMetadataInterval = 30 * time.Second

// TokenMetadataBudget is how long one activity attempt works before it
// returns with its progress saved; the next run goes on.
const TokenMetadataBudget = 2 * time.Minute

// TokenMetadataScheduleID is the ID of the chain's TokenMetadata Schedule.
func TokenMetadataScheduleID(chainID string) string { return chainID + ":token-metadata" }

// TokenMetadataWorkflowID is the workflow ID prefix of its runs.
func TokenMetadataWorkflowID(chainID string) string { return chainID + ":token-metadata" }

// TokenMetadataSchedule is the Schedule that runs the chain's
// TokenMetadata workflow every TokenMetadataInterval (mode: types.IndexMode
// token-metadata), overlap skip as for the aggregator.
func (o Options) TokenMetadataSchedule(mode string, arg any) PeriodicWorkflow {
	p := o.ScanSchedule(TokenMetadataScheduleID(o.ChainID), TokenMetadataWorkflowID(o.ChainID), TokenMetadataWorkflow,
		"token metadata", TokenMetadataInterval, mode, arg)
	p.Timeout = 10 * time.Minute
	return p
}

// TokenMetadataActivity is for its activity on the admin queue: it
// heartbeats after every token, and is retried (the aggregator's retry
// settings, retry.aggregate) until the run's timeout; a failure costs
// nothing saved, since every token is stored as it is answered.
func (o Options) TokenMetadataActivity() workflow.ActivityOptions {
	return workflow.ActivityOptions{
		TaskQueue:           AdminQueue(o.ChainID),
		StartToCloseTimeout: 2 * TokenMetadataBudget,
		HeartbeatTimeout:    time.Minute,
		RetryPolicy:         RetryPolicy(o.Retry.Aggregate),
	}
}
