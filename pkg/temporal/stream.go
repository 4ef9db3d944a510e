package temporal

// The names of the change stream's appender (a side job:
// pkg/indexer/jobs/streamappend).

// StreamAppendWorkflow is the appender's workflow type.
const StreamAppendWorkflow = "StreamAppend"

// StreamScheduleID is the ID of the Schedule that runs it.
func StreamScheduleID(chainID string) string { return chainID + ":stream" }

// StreamWorkflowID is the workflow ID prefix of its runs.
func StreamWorkflowID(chainID string) string { return chainID + ":stream" }
