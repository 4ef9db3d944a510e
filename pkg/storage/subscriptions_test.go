package storage

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A subscription's newest save wins, before and after a merge; each
// chain's are its own, and the reader's view reads them too.
func TestSubscriptionsNewestWins(t *testing.T) {
	c := openTest(t)
	ctx := testContext(t)
	first, err := c.Records().SaveSubscription(ctx, SubscriptionRecord{ChainID: "a", ID: "0123456789ab", State: "active",
		URL: "http://127.0.0.1:1/h?token=x", Filter: "address=0x00000000000000000000000000000000000000aa", Include: "logs",
		SecretEnv: "HOOK_SECRET", StartAfter: 41})
	require.NoError(t, err)
	_, err = c.Records().SaveSubscription(ctx, SubscriptionRecord{ChainID: "b", ID: "ba9876543210", State: "active", URL: "http://127.0.0.1:2/"})
	require.NoError(t, err)
	paused := first
	paused.State = "paused"
	saved, err := c.Records().SaveSubscription(ctx, paused)
	require.NoError(t, err)
	require.Greater(t, saved.Version, first.Version)
	require.Equal(t, first.CreatedAt, saved.CreatedAt, "created_at is kept")

	for _, merge := range []bool{false, true} {
		if merge {
			mergeFully(t, c, tableSubscriptions)
		}
		got, found, err := c.Reader().Records().Subscription(ctx, "a", "0123456789ab")
		require.NoError(t, err)
		require.True(t, found)
		require.Equal(t, "paused", got.State)
		require.Equal(t, first.URL, got.URL)
		require.Equal(t, first.Filter, got.Filter)
		require.Equal(t, "logs", got.Include)
		require.Equal(t, "HOOK_SECRET", got.SecretEnv)
		require.Equal(t, uint64(41), got.StartAfter)
		all, err := c.Records().Subscriptions(ctx, "")
		require.NoError(t, err)
		require.Len(t, all, 2)
		require.Equal(t, []string{"a", "b"}, []string{all[0].ChainID, all[1].ChainID})
		_, found, err = c.Records().Subscription(ctx, "b", "0123456789ab")
		require.NoError(t, err)
		require.False(t, found, "an ID of another chain")
	}
	_, err = c.Records().SaveSubscription(ctx, SubscriptionRecord{ChainID: "a", State: "active"})
	require.Error(t, err, "no ID")
}
