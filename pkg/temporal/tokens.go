package temporal

// The names of token metadata (a side job: pkg/indexer/jobs/tokenmeta),
// which asks every token with a transfer for its name, symbol, decimals
// and total supply once, off the write path.

// TokenMetadataWorkflow is its workflow type.
const TokenMetadataWorkflow = "TokenMetadata"

// TokenMetadataScheduleID is the ID of the chain's TokenMetadata Schedule.
func TokenMetadataScheduleID(chainID string) string { return chainID + ":token-metadata" }

// TokenMetadataWorkflowID is the workflow ID prefix of its runs.
func TokenMetadataWorkflowID(chainID string) string { return chainID + ":token-metadata" }
