package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/tideline-dev/tideline/pkg/indexer/jobs/webhook"
	"github.com/tideline-dev/tideline/pkg/storage"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// Webhook subscriptions: `indexer subscription add|pause|resume|remove|list`
// and the worker's start of a chain's deliveries. As for chains, the
// state is stored first, then Temporal is told (the delivery's workflow
// started, or signalled); a delivery reads the stored state before each
// activity, so it converges on it even if the signal was lost.

// SubscriptionStore is what the subscription steps need of the stored
// subscriptions (*storage.Records).
type SubscriptionStore interface {
	SaveSubscription(ctx context.Context, rec storage.SubscriptionRecord) (storage.SubscriptionRecord, error)
	Subscriptions(ctx context.Context, chainID string) ([]storage.SubscriptionRecord, error)
	Subscription(ctx context.Context, chainID, id string) (storage.SubscriptionRecord, bool, error)
}

// StreamPositions is what a new subscription's start reads of the change
// stream (*storage.StreamReader): its last event, or a height's first.
type StreamPositions interface {
	StreamTail(ctx context.Context, chainID string, n int) ([]storage.StreamEvent, error)
	StreamSeqOfHeight(ctx context.Context, chainID string, height uint64) (uint64, bool, error)
}

var (
	_ SubscriptionStore = (*storage.Records)(nil)
	_ StreamPositions   = (*storage.StreamReader)(nil)
)

// Subscriptions adds, pauses, resumes, removes and lists subscriptions,
// and starts their deliveries.
type Subscriptions struct {
	Store    SubscriptionStore
	Stream   StreamPositions
	Temporal client.Client
	// SearchAttributes says whether the deliveries' starts carry
	// tideline's search attributes (registered by every worker).
	SearchAttributes bool
}

// StartAt is where a new subscription's delivery starts: after the
// stream's last event (neither set), at a seq, or at the first event of a
// height or above.
type StartAt struct {
	Seq, Height *uint64
}

// NotStreamedError is a start height the stream has no event at or above
// yet.
type NotStreamedError struct {
	ChainID string
	Height  uint64
}

func (e *NotStreamedError) Error() string {
	return fmt.Sprintf("chain %s's stream has no event at height %d or above yet: give a lower height, or none to start after its last event", e.ChainID, e.Height)
}

func (s *Subscriptions) options(chainID string) temporal.Options {
	o := temporal.NewOptions(chainID, 0)
	o.SearchAttributes = s.SearchAttributes
	return o
}

func input(sub storage.SubscriptionRecord) webhook.Input {
	return webhook.Input{ChainID: sub.ChainID, SubscriptionID: sub.ID,
		Progress: webhook.Progress{Cursor: sub.StartAfter, State: webhook.Active}}
}

// Add stores a new active subscription (sub without ID and start) and
// starts its delivery. A subscription stored whose delivery could not be
// started is returned with the error: a worker starting the chain, or
// `indexer subscription resume`, starts it.
func (s *Subscriptions) Add(ctx context.Context, sub webhook.Subscription, at StartAt) (webhook.Subscription, error) {
	if err := webhook.CheckURL(sub.URL); err != nil {
		return sub, err
	}
	if err := webhook.CheckSecretEnv(sub.SecretEnv); err != nil {
		return sub, err
	}
	after, err := s.startAfter(ctx, sub.ChainID, at)
	if err != nil {
		return sub, err
	}
	if sub.ID, err = webhook.NewID(); err != nil {
		return sub, err
	}
	sub.State, sub.StartAfter = webhook.Active, after
	rec, err := s.Store.SaveSubscription(ctx, sub.Record())
	if err != nil {
		return sub, err
	}
	if err := webhook.Start(ctx, s.Temporal, s.options(sub.ChainID), input(rec)); err != nil {
		return sub, fmt.Errorf("subscription %s stored, its delivery not started (a worker starting chain %s starts it, or indexer subscription resume): %w",
			sub.ID, sub.ChainID, err)
	}
	return sub, nil
}

// startAfter is the seq after which a new subscription's delivery begins.
func (s *Subscriptions) startAfter(ctx context.Context, chainID string, at StartAt) (uint64, error) {
	switch {
	case at.Seq != nil && at.Height != nil:
		return 0, errors.New("give --from-seq or --from-height, not both")
	case at.Seq != nil:
		if *at.Seq == 0 {
			return 0, errors.New("--from-seq: sequence numbers start at 1")
		}
		return *at.Seq - 1, nil
	case at.Height != nil:
		seq, found, err := s.Stream.StreamSeqOfHeight(ctx, chainID, *at.Height)
		if err != nil {
			return 0, err
		}
		if !found {
			return 0, &NotStreamedError{ChainID: chainID, Height: *at.Height}
		}
		return seq - 1, nil
	}
	tail, err := s.Stream.StreamTail(ctx, chainID, 1)
	if err != nil || len(tail) == 0 {
		return 0, err
	}
	return tail[0].Seq, nil
}

// NotFoundError is a subscription that is not stored (or was removed).
type NotFoundError struct{ ID string }

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("no subscription %s (indexer subscription list shows them)", e.ID)
}

// Current is the stored subscription of that ID, whatever its chain (IDs
// are random, so one chain has it), not removed.
func (s *Subscriptions) Current(ctx context.Context, id string) (storage.SubscriptionRecord, error) {
	if err := webhook.CheckID(id); err != nil {
		return storage.SubscriptionRecord{}, err
	}
	all, err := s.Store.Subscriptions(ctx, "")
	if err != nil {
		return storage.SubscriptionRecord{}, err
	}
	for _, rec := range all {
		if rec.ID == id && rec.State != webhook.Removed {
			return rec, nil
		}
	}
	return storage.SubscriptionRecord{}, &NotFoundError{ID: id}
}

// SetState stores the subscription's new state (webhook.Active, Paused or
// Removed) and tells its delivery: pause and remove are signalled (no
// delivery running is nothing to tell), resume is signalled to the
// delivery, started first if none runs, which also ends a dead letter.
// stored is false when the state was the stored one already (resume is
// signalled anyway: it is how a dead letter ends).
func (s *Subscriptions) SetState(ctx context.Context, id, state string) (rec storage.SubscriptionRecord, stored bool, err error) {
	if state != webhook.Active && state != webhook.Paused && state != webhook.Removed {
		return rec, false, fmt.Errorf("subscription state %q is not active, paused or removed", state)
	}
	if rec, err = s.Current(ctx, id); err != nil {
		return rec, false, err
	}
	chainID := rec.ChainID
	if rec.State != state {
		rec.State = state
		if rec, err = s.Store.SaveSubscription(ctx, rec); err != nil {
			return rec, false, err
		}
		stored = true
	}
	switch state {
	case webhook.Active:
		err = webhook.Resume(ctx, s.Temporal, s.options(chainID), input(rec))
	case webhook.Paused:
		_, err = webhook.Signal(ctx, s.Temporal, chainID, id, webhook.SignalPause)
	default:
		_, err = webhook.Signal(ctx, s.Temporal, chainID, id, webhook.SignalRemove)
	}
	return rec, stored, err
}

// Listed is a stored subscription with its delivery's progress.
type Listed struct {
	webhook.Subscription
	// Progress is the delivery's answer; Running is false when no
	// delivery runs, and Unanswered holds why it could not be asked.
	Progress   webhook.Progress
	Running    bool
	Unanswered error
}

// List returns the subscriptions of a chain ("" for every chain), removed
// ones left out, each with its delivery's progress (asked within
// AskTimeout: a chain no worker runs answers nothing).
func (s *Subscriptions) List(ctx context.Context, chainID string) ([]Listed, error) {
	recs, err := s.Store.Subscriptions(ctx, chainID)
	if err != nil {
		return nil, err
	}
	var out []Listed
	for _, rec := range recs {
		if rec.State == webhook.Removed {
			continue
		}
		sub, err := webhook.FromRecord(rec)
		if err != nil {
			return nil, err
		}
		l := Listed{Subscription: sub}
		qctx, cancel := context.WithTimeout(ctx, AskTimeout)
		l.Running, l.Unanswered = webhook.Query(qctx, s.Temporal, rec.ChainID, rec.ID, &l.Progress)
		cancel()
		out = append(out, l)
	}
	return out, nil
}

// Ensure starts the delivery of every active subscription of the chain
// that has none running (a worker starting the chain): one start call
// each, which finds a running delivery as it is. It returns the IDs
// started or found and the first error, having tried every one.
func (s *Subscriptions) Ensure(ctx context.Context, chainID string, timeout time.Duration) ([]string, error) {
	recs, err := s.Store.Subscriptions(ctx, chainID)
	if err != nil {
		return nil, err
	}
	var (
		ids   []string
		first error
	)
	for _, rec := range recs {
		if rec.State != webhook.Active {
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, timeout)
		err := webhook.Start(sctx, s.Temporal, s.options(chainID), input(rec))
		cancel()
		if err != nil && first == nil {
			first = err
		}
		if err == nil {
			ids = append(ids, rec.ID)
		}
	}
	return ids, first
}
