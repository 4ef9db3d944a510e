package types

// TokenMetadataInput is the input of one TokenMetadata run (its
// Schedule's argument): the chain ID only.
type TokenMetadataInput struct {
	ChainID string `json:"chain_id"`
}

// TokenMetadataResult says what one TokenMetadata activity did.
type TokenMetadataResult struct {
	// Height is how far every token with a transfer has metadata (the
	// token_metadata_height of chain_state); HasHeight is false before the
	// first chunk.
	Height    uint64 `json:"height"`
	HasHeight bool   `json:"has_height"`
	// Watermark is the height it worked up to (never past).
	Watermark uint64 `json:"watermark"`
	// Tokens is how many tokens it asked; Answered how many answered at
	// least one of name, symbol, decimals and total supply.
	Tokens   int `json:"tokens"`
	Answered int `json:"answered"`
	// More is set when it stopped at its time budget below the watermark.
	More bool `json:"more,omitempty"`
}
