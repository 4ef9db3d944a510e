package types

// PruneInput is the input of one Prune run (its Schedule's argument).
type PruneInput struct {
	ChainID string `json:"chain_id"`
}

// PruneResult says what one Prune activity did.
type PruneResult struct {
	// PrunedHeight is the chain's pruned height at the end (HasPruned
	// false: nothing pruned yet).
	PrunedHeight uint64 `json:"pruned_height"`
	HasPruned    bool   `json:"has_pruned"`
	// Target is the height retention allows pruning up to now (the
	// lowest of its limits); Raised tells whether PrunedHeight was raised
	// to it by this run.
	Target uint64 `json:"target"`
	Raised bool   `json:"raised,omitempty"`
	// Skipped says why nothing was deleted, if nothing was.
	Skipped string `json:"skipped,omitempty"`
	// Dropped lists "table/partition" of the partitions dropped, Mutated
	// the tables a DELETE mutation was started on, Reindex the other
	// chains whose marks of a dropped partition were deleted.
	Dropped []string `json:"dropped,omitempty"`
	Mutated []string `json:"mutated,omitempty"`
	Reindex []string `json:"reindex,omitempty"`
}
