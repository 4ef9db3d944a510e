// Package workflow holds the indexer's workflows, one file each: HeadScan
// (the periodic head check), IndexBlock (one height), and the catch-up
// Scheduler and GapScan. Workflows are deterministic: all I/O goes through
// activities (pkg/indexer/activity), all time through the SDK.
package workflow

import (
	"fmt"

	sdktemporal "go.temporal.io/sdk/temporal"

	"github.com/tideline-dev/tideline/pkg/indexer/activity"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// a refers to activity methods for type-checked calls; it is never
// dereferenced (the worker registers the real instance).
var a *activity.Activities

// Workflows is the set of workflows of one worker process. Per-chain
// settings come from the worker's config, never from workflow inputs, so
// inputs carry no secrets.
type Workflows struct {
	Chains map[string]temporal.Options
}

// ErrTypeUnknownChain is the application error type for a chain ID the
// worker has no settings for; retrying cannot help.
const ErrTypeUnknownChain = "UnknownChain"

func (w *Workflows) options(chainID string) (temporal.Options, error) {
	o, ok := w.Chains[chainID]
	if !ok {
		return temporal.Options{}, sdktemporal.NewNonRetryableApplicationError(
			fmt.Sprintf("chain %q is not configured on this worker", chainID), ErrTypeUnknownChain, nil)
	}
	return o, nil
}
