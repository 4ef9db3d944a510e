// Package temporal holds everything tideline says to Temporal by name (task
// queues, workflow and schedule IDs, workflow types), the client built from
// config, and the one place where workflow and activity options are made.
package temporal

import "fmt"

// Workflow type names, stable across refactors because histories keep them.
const (
	HeadScanWorkflow   = "HeadScan"
	GapScanWorkflow    = "GapScan"
	SchedulerWorkflow  = "Scheduler"
	IndexBlockWorkflow = "IndexBlock"
	IndexRangeWorkflow = "IndexRange"
	// AggregateWorkflow counts a chain's heights into aggregates.
	AggregateWorkflow = "Aggregate"
	// PruneWorkflow deletes a chain's old detailed rows (retention).
	PruneWorkflow = "Prune"
)

// SchedulerProgressQuery is the query a SchedulerWorkflow answers.
const SchedulerProgressQuery = "progress"

// SchedulerOwnedMemo is the memo key of the heights a SchedulerWorkflow
// owns (a chaindata.HeightRange): set at its start, updated when it shrinks,
// carried over by ContinueAsNew.
const SchedulerOwnedMemo = "owned"

// RangeDoneSignal is what an IndexRange workflow sends the chain's
// scheduler when it ends, so that the scheduler looks at its in-flight
// window at once instead of at its next poll.
const RangeDoneSignal = "range-done"

// AdminQueue is the task queue of a chain's operations: scans and scheduling.
func AdminQueue(chainID string) string { return "admin:" + chainID }

// IndexQueue is the task queue of a chain's block indexing.
func IndexQueue(chainID string) string { return "index:" + chainID }

// RangeQueue is the task queue of a chain's range indexing (the backlog):
// its own workers and slots, so a range never takes a live block's slot.
func RangeQueue(chainID string) string { return "range:" + chainID }

// IndexRangeID is the workflow ID of the indexing of one range of heights,
// fixed per (chain, from, to).
func IndexRangeID(chainID string, from, to uint64) string {
	return fmt.Sprintf("%s:range:%d-%d", chainID, from, to)
}

// IndexBlockID is the workflow ID of the indexing of one height. It is fixed
// per (chain, height), so two starts for the same height meet in Temporal.
func IndexBlockID(chainID string, height uint64) string {
	return fmt.Sprintf("%s:index:%d", chainID, height)
}

// SchedulerID is the workflow ID of a chain's catch-up scheduler. It is fixed
// per chain, so Temporal refuses a second one while one runs.
func SchedulerID(chainID string) string { return chainID + ":scheduler" }

// HeadScanScheduleID is the ID of the Temporal Schedule that runs HeadScan.
func HeadScanScheduleID(chainID string) string { return chainID + ":headscan" }

// HeadScanWorkflowID is the workflow ID prefix of the runs that schedule starts.
func HeadScanWorkflowID(chainID string) string { return chainID + ":headscan" }

// GapScanScheduleID is the ID of the Temporal Schedule that runs GapScan.
func GapScanScheduleID(chainID string) string { return chainID + ":gapscan" }

// GapScanWorkflowID is the workflow ID prefix of the runs that schedule starts.
func GapScanWorkflowID(chainID string) string { return chainID + ":gapscan" }

// AggregateScheduleID is the ID of the Temporal Schedule that runs the
// chain's Aggregate workflow.
func AggregateScheduleID(chainID string) string { return chainID + ":aggregate" }

// AggregateWorkflowID is the workflow ID prefix of the runs that schedule
// starts.
func AggregateWorkflowID(chainID string) string { return chainID + ":aggregate" }

// PruneScheduleID is the ID of the Temporal Schedule that runs the chain's
// Prune workflow (only while the chain has retention on).
func PruneScheduleID(chainID string) string { return chainID + ":prune" }

// PruneWorkflowID is the workflow ID prefix of the runs that schedule
// starts.
func PruneWorkflowID(chainID string) string { return chainID + ":prune" }

// ScheduleIDs are the IDs of a chain's Schedules: the scans, the
// aggregator, token metadata, with retention on, pruning, with traces
// on, the traces backfill and, with the stream on, its appender. Those that do not exist are skipped by every
// control of them (chain_pause.go, chain_remove.go).
func ScheduleIDs(chainID string) []string {
	return []string{HeadScanScheduleID(chainID), GapScanScheduleID(chainID), AggregateScheduleID(chainID), PruneScheduleID(chainID),
		TokenMetadataScheduleID(chainID), TraceBackfillScheduleID(chainID), StreamScheduleID(chainID)}
}

// The names of token metadata (a side job: pkg/indexer/jobs/tokenmeta),
// which asks every token with a transfer for its name, symbol, decimals
// and total supply once, off the write path.

// TokenMetadataWorkflow is its workflow type.
const TokenMetadataWorkflow = "TokenMetadata"

// TokenMetadataScheduleID is the ID of the chain's TokenMetadata Schedule.
func TokenMetadataScheduleID(chainID string) string { return chainID + ":token-metadata" }

// TokenMetadataWorkflowID is the workflow ID prefix of its runs.
func TokenMetadataWorkflowID(chainID string) string { return chainID + ":token-metadata" }

// The names of the traces backfill (a side job:
// pkg/indexer/jobs/tracebackfill), which fills the traces of heights
// indexed without them while a chain traces.

// TraceBackfillWorkflow is the backfill's workflow type.
const TraceBackfillWorkflow = "TraceBackfill"

// TraceBackfillScheduleID is the ID of the Schedule that runs it (only
// while the chain traces).
func TraceBackfillScheduleID(chainID string) string { return chainID + ":traces-backfill" }

// TraceBackfillWorkflowID is the workflow ID prefix of its runs.
func TraceBackfillWorkflowID(chainID string) string { return chainID + ":traces-backfill" }

// The names of the change stream's appender (a side job:
// pkg/indexer/jobs/streamappend).

// StreamAppendWorkflow is the appender's workflow type.
const StreamAppendWorkflow = "StreamAppend"

// StreamScheduleID is the ID of the Schedule that runs it.
func StreamScheduleID(chainID string) string { return chainID + ":stream" }

// StreamWorkflowID is the workflow ID prefix of its runs.
func StreamWorkflowID(chainID string) string { return chainID + ":stream" }

// The names of the webhook deliveries (a side job:
// pkg/indexer/jobs/webhook, which holds their signal, query and memo
// names, options and start calls): one WebhookDelivery workflow per
// subscription to a chain's change stream.

// WebhookWorkflow is the delivery's workflow type.
const WebhookWorkflow = "WebhookDelivery"

// WebhookID is the workflow ID of a subscription's delivery.
func WebhookID(chainID, subscriptionID string) string {
	return chainID + ":webhook:" + subscriptionID
}
