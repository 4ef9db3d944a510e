package types

// IndexModeTraces is the IndexMode search attribute of the traces
// backfill's runs (it indexes no height: it adds the traces of heights
// indexed without them).
const IndexModeTraces IndexMode = "traces"

// TraceBackfillInput is the input of one TraceBackfill run (its
// Schedule's argument).
type TraceBackfillInput struct {
	ChainID string `json:"chain_id"`
}

// TraceBackfillResult says what one backfill activity did. The pass under
// way covers [Floor, Top], newest first; Next is the next height it looks
// at (with Running); Done is the top of the last complete pass.
type TraceBackfillResult struct {
	Traced  uint64 `json:"traced"`            // heights whose traces it wrote
	Frames  uint64 `json:"frames"`            // call frames written
	Failed  uint64 `json:"failed,omitempty"`  // heights whose trace it could not have
	Skipped string `json:"skipped,omitempty"` // why it did nothing, if it did nothing
	Running bool   `json:"running"`
	Top     uint64 `json:"top"`
	Floor   uint64 `json:"floor"`
	Next    uint64 `json:"next,omitempty"`
	Done    uint64 `json:"done,omitempty"`
}
