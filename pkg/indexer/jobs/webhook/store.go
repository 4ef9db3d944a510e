package webhook

import (
	"context"

	"github.com/tideline-dev/tideline/pkg/storage"
)

// Subscriptions is what the delivery reads of the operator's rows
// (*storage.RecordReader): the stored subscription, whose URL and state it
// follows. The chain's stream it reads through a stream.Source
// (*storage.StreamReader).
type Subscriptions interface {
	Subscription(ctx context.Context, chainID, id string) (storage.SubscriptionRecord, bool, error)
}

var _ Subscriptions = (*storage.RecordReader)(nil)
