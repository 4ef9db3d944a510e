package temporal

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
