package storage

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"github.com/tideline-dev/tideline/pkg/localstack"
)

// Keys round trip: created, listed, changed and revoked; the newest row
// wins, also against a row written with a version from a clock far
// ahead, before and after a merge; the read-only user reads them.
func TestAPIKeysRoundTrip(t *testing.T) {
	c := openTest(t)
	ctx := testContext(t)
	none, err := c.Records().APIKeys(ctx)
	require.NoError(t, err)
	require.Empty(t, none)

	a, err := c.Records().SaveAPIKey(ctx, APIKeyRecord{ID: "aaaaaaaaaaaa", Name: "partner a", KeyHash: "hash-a", Rate: 5, Burst: 10})
	require.NoError(t, err)
	require.False(t, a.CreatedAt.IsZero())
	_, err = c.Records().SaveAPIKey(ctx, APIKeyRecord{ID: "bbbbbbbbbbbb", Name: "partner b", KeyHash: "hash-b", Rate: 0, Burst: 1})
	require.NoError(t, err)

	// A row of key a from a host whose clock runs a day ahead: a new rate.
	ahead := a.Version + uint64(24*time.Hour)
	now := time.Now().UTC().Truncate(time.Second)
	require.NoError(t, c.insert(ctx, insertStmt{tableAPIKeys, apiKeyColumns},
		[][]any{{a.ID, a.Name, a.KeyHash, 7.5, uint32(15), a.CreatedAt, uint8(0), time.Unix(0, 0).UTC(), now, ahead}}))
	keys, err := c.Records().APIKeys(ctx)
	require.NoError(t, err)
	require.Len(t, keys, 2)
	require.Equal(t, 7.5, keys[0].Rate, "the newest row wins")

	// The revocation is a new row over the newest one, and wins over it.
	rev := keys[0]
	rev.Revoked = true
	revoked, err := c.Records().SaveAPIKey(ctx, rev)
	require.NoError(t, err)
	require.Greater(t, revoked.Version, ahead, "a save is always the newest")

	for _, merge := range []bool{false, true} {
		if merge {
			mergeFully(t, c, tableAPIKeys)
		}
		keys, err := c.Records().APIKeys(ctx)
		require.NoError(t, err)
		require.Len(t, keys, 2)
		got := keys[0]
		require.Equal(t, "aaaaaaaaaaaa", got.ID)
		require.Equal(t, "partner a", got.Name)
		require.Equal(t, "hash-a", got.KeyHash)
		require.True(t, got.Revoked)
		require.False(t, got.RevokedAt.IsZero())
		require.Equal(t, 7.5, got.Rate)
		require.Equal(t, uint32(15), got.Burst)
		require.Equal(t, a.CreatedAt.Unix(), got.CreatedAt.Unix(), "created_at is kept over changes")
		require.Equal(t, revoked.Version, got.Version)
		require.Equal(t, "bbbbbbbbbbbb", keys[1].ID)
		require.False(t, keys[1].Revoked)
		require.True(t, keys[1].RevokedAt.IsZero())
	}

	// The query API's user (readonly = 1) reads them.
	cfg := testConfig(t)
	cfg.Username = localstack.ReadOnlyUser
	r, err := OpenReader(ctx, cfg, zaptest.NewLogger(t))
	require.NoError(t, err)
	t.Cleanup(func() { r.Close() })
	keys, err = r.Records().APIKeys(ctx)
	require.NoError(t, err)
	require.Len(t, keys, 2)
	require.True(t, keys[0].Revoked)

	_, err = c.Records().SaveAPIKey(ctx, APIKeyRecord{ID: "x"})
	require.Error(t, err, "a key without a hash is refused")
}
