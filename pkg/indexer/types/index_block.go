package types

// IndexBlockInput is the input of one IndexBlockWorkflow.
type IndexBlockInput struct {
	ChainID string `json:"chain_id"`
	Height  uint64 `json:"height"`
	// Mode is who started the workflow (empty in runs started before the
	// field existed).
	Mode IndexMode `json:"mode,omitempty"`
}

// IndexBlockResult says what was written for one height.
type IndexBlockResult struct {
	Hash           string `json:"hash"`
	TxCount        uint32 `json:"tx_count"`
	LogCount       uint32 `json:"log_count"`
	AlreadyIndexed bool   `json:"already_indexed"`
	// NotProduced is set when the node has no block at the height and its
	// head is below it: nothing was written, and later scans start the
	// height again once it exists.
	NotProduced bool `json:"not_produced,omitempty"`
	// Reorg is set when indexing this height found a reorganisation near
	// the head and re-indexed the canonical blocks below it.
	Reorg *ReorgResult `json:"reorg,omitempty"`
}

// StartIndexInput asks for IndexBlockWorkflows for the given heights.
type StartIndexInput struct {
	ChainID string        `json:"chain_id"`
	Heights []uint64      `json:"heights"`
	Level   PriorityLevel `json:"level"`
	// SkipIndexed asks to leave out heights already indexed: a catch-up
	// range may hold some, and the push source may have indexed a height
	// since a scan listed it missing.
	SkipIndexed bool `json:"skip_indexed"`
	// Mode is the path starting them (direct, scheduler, gap or range);
	// empty in calls recorded before it existed, which started heights
	// as direct.
	Mode IndexMode `json:"mode,omitempty"`
}

// StartIndexResult counts what a StartIndex call did.
type StartIndexResult struct {
	// Started counts the workflows started.
	Started int `json:"started"`
	// Skipped counts heights left out because they were indexed already.
	Skipped int `json:"skipped"`
	// Running counts heights whose workflow was running already: Temporal
	// refused the second start (a duplicate).
	Running int `json:"running,omitempty"`
}
