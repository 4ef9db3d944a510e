// Package activity holds the indexer's activities: every piece of I/O a
// workflow needs (node, database, Temporal API). Activities are methods on
// one struct whose dependencies are filled in by app/indexer; workflows call
// them through a nil *Activities so references are type-checked.
package activity

import (
	"fmt"
	"sync"

	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/metrics"
	"github.com/tideline-dev/tideline/pkg/rpc"
	"github.com/tideline-dev/tideline/pkg/storage"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// Chain is what the activities need of one followed chain.
type Chain struct {
	RPC         rpc.Client
	Options     temporal.Options
	StartHeight uint64
}

// Activities is the set of the indexer's activities.
type Activities struct {
	Chains   map[string]Chain
	Store    storage.Store
	Temporal client.Client
	Metrics  *metrics.Metrics
	Log      *zap.Logger
	// Push holds the push source of each chain that has one in this
	// process; nil or absent means pull only. Set before the workers
	// start, read-only afterwards.
	Push map[string]PushSource

	reorg     reorgTracker
	turnsOnce sync.Once
	turns     *heightTurns
}

// ErrUnknownChain is returned for a chain ID this worker is not configured for.
type ErrUnknownChain struct{ ChainID string }

func (e *ErrUnknownChain) Error() string {
	return fmt.Sprintf("chain %q is not configured on this worker", e.ChainID)
}

func (a *Activities) chain(chainID string) (Chain, error) {
	c, ok := a.Chains[chainID]
	if !ok {
		return Chain{}, &ErrUnknownChain{ChainID: chainID}
	}
	return c, nil
}

// logger returns the activity logger with the chain named.
func (a *Activities) logger(chainID string) *zap.Logger {
	return a.Log.With(zap.String("chain_id", chainID))
}
