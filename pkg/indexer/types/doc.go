// Package types holds the inputs and results of workflows and activities
// and the scheduling levels: what crosses a workflow history, so its JSON
// tags are stable. The chain model (blocks, heights, ranges) is in
// pkg/chain.
package types
