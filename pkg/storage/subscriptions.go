package storage

import (
	"context"
	"fmt"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// Webhook subscriptions (migration create_subscriptions): stored like the
// chain registry, one logical row per subscription, the newest version
// winning. What the filter and include mean is pkg/webhook's business;
// here they are strings.

const tableSubscriptions = "subscriptions"

var subscriptionColumns = []string{"chain_id", "id", "state", "url", "filter", "include", "secret_env",
	"start_after", "created_at", "updated_at", "version"}

// SubscriptionRecord is the newest row of one subscription.
type SubscriptionRecord struct {
	ChainID string
	ID      string
	State   string // active, paused or removed (pkg/webhook)
	// URL receives the events; it may hold a token, so it is never
	// logged nor put in a workflow input.
	URL     string
	Filter  string
	Include string
	// SecretEnv names the workers' environment variable with the signing
	// secret ("": unsigned).
	SecretEnv  string
	StartAfter uint64 // the seq after which delivery began
	CreatedAt  time.Time
	UpdatedAt  time.Time
	Version    uint64
}

// SaveSubscription writes a new row for the subscription and returns it
// as stored, with a version above every stored row of it (see
// SaveChainRecord).
func (c *Records) SaveSubscription(ctx context.Context, rec SubscriptionRecord) (SubscriptionRecord, error) {
	if rec.ChainID == "" || rec.ID == "" || rec.State == "" {
		return rec, fmt.Errorf("storage: SaveSubscription: empty chain id (%q), id (%q) or state (%q)", rec.ChainID, rec.ID, rec.State)
	}
	var top uint64
	if err := c.queryRow(ctx, subscriptionVersionQuery{rec.ChainID, rec.ID}, &top); err != nil {
		return rec, fmt.Errorf("storage: reading %s for subscription %s of chain %q: %w", tableSubscriptions, rec.ID, rec.ChainID, err)
	}
	rec.Version = max(c.clock.next(), top+1)
	rec.UpdatedAt = time.Now().UTC().Truncate(time.Second)
	if rec.CreatedAt.IsZero() {
		rec.CreatedAt = rec.UpdatedAt
	}
	row := []any{rec.ChainID, rec.ID, rec.State, rec.URL, rec.Filter, rec.Include, rec.SecretEnv,
		rec.StartAfter, rec.CreatedAt.UTC(), rec.UpdatedAt, rec.Version}
	if err := c.insert(ctx, insertStmt{tableSubscriptions, subscriptionColumns}, [][]any{row}); err != nil {
		return rec, fmt.Errorf("storage: writing %s for subscription %s of chain %q: %w", tableSubscriptions, rec.ID, rec.ChainID, err)
	}
	return rec, nil
}

// Subscriptions returns the newest row of every subscription of the chain
// ("" for every chain), removed ones too, by chain and ID.
func (c *RecordReader) Subscriptions(ctx context.Context, chainID string) ([]SubscriptionRecord, error) {
	var out []SubscriptionRecord
	err := c.query(ctx, fmt.Sprintf("reading %s of chain %q", tableSubscriptions, chainID), subscriptionsQuery{chainID: chainID},
		func(r driver.Rows) error {
			var s SubscriptionRecord
			err := r.Scan(&s.ChainID, &s.ID, &s.State, &s.URL, &s.Filter, &s.Include, &s.SecretEnv,
				&s.StartAfter, &s.CreatedAt, &s.UpdatedAt, &s.Version)
			out = append(out, s)
			return err
		})
	return out, err
}

// Subscription returns the newest row of one subscription; found is false
// if it was never stored.
func (c *RecordReader) Subscription(ctx context.Context, chainID, id string) (SubscriptionRecord, bool, error) {
	all, err := c.Subscriptions(ctx, chainID)
	if err != nil {
		return SubscriptionRecord{}, false, err
	}
	for _, s := range all {
		if s.ID == id {
			return s, true, nil
		}
	}
	return SubscriptionRecord{}, false, nil
}

// subscriptionVersionQuery is the highest stored version of one
// subscription (0 for none).
type subscriptionVersionQuery struct{ chainID, id string }

func (q subscriptionVersionQuery) toSQL() (string, []any) {
	return "SELECT max(version) FROM " + tableSubscriptions + " WHERE chain_id = ? AND id = ?", []any{q.chainID, q.id}
}

// subscriptionsQuery reads the newest row per subscription, of one chain
// or of all.
type subscriptionsQuery struct{ chainID string }

func (q subscriptionsQuery) toSQL() (string, []any) {
	where, args := "", []any(nil)
	if q.chainID != "" {
		where, args = " WHERE chain_id = ?", []any{q.chainID}
	}
	return `SELECT chain_id, id, argMax(state, version), argMax(url, version), argMax(filter, version),
		argMax(include, version), argMax(secret_env, version), argMax(start_after, version),
		argMax(created_at, version), argMax(updated_at, version), max(version)
		FROM ` + tableSubscriptions + where + ` GROUP BY chain_id, id ORDER BY chain_id, id`, args
}
