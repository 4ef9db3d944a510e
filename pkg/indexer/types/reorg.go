package types

// ReorgResult describes a chain reorganisation that an IndexBlock activity
// found near the head and repaired before returning.
type ReorgResult struct {
	// ForkPoint is the common ancestor: the highest height below the
	// orphaned ones whose stored block is the node's, or the height just
	// below the lowest orphaned one when the heights between are not
	// stored. (A reorganisation with no common ancestor within the
	// confirmation depth is not repaired: the chain's writes are held.)
	ForkPoint uint64 `json:"fork_point"`
	// Depth is how many heights above ForkPoint were replaced or removed,
	// up to the highest orphaned one.
	Depth uint64 `json:"depth"`
	// Reindexed are the heights rewritten with the node's canonical block;
	// Removed the heights the node no longer has (their rows superseded).
	Reindexed []uint64 `json:"reindexed"`
	Removed   []uint64 `json:"removed,omitempty"`
}
