package webhook

import (
	"context"

	"github.com/tideline-dev/tideline/pkg/storage"
	"github.com/tideline-dev/tideline/pkg/stream"
)

// Store is what the delivery reads (*storage.Reader): the stored
// subscription, whose URL and state it follows, and the chain's stream.
type Store interface {
	Subscription(ctx context.Context, chainID, id string) (storage.SubscriptionRecord, bool, error)
	stream.Source
}

var _ Store = (*storage.Reader)(nil)
