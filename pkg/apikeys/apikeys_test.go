package apikeys

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/internal/testkit"
	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/localstack"
	"github.com/tideline-dev/tideline/pkg/storage"
)

var testCH *localstack.ClickHouse

func TestMain(m *testing.M) { os.Exit(testkit.RunWithClickHouse(m, "apikeys", &testCH)) }

func TestKeyFormat(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		k, err := New()
		require.NoError(t, err)
		require.NoError(t, Check(k))
		require.Len(t, k, Len)
		require.True(t, strings.HasPrefix(k, "tl_"))
		require.False(t, seen[k])
		seen[k] = true
		sum := sha256.Sum256([]byte(k))
		require.Equal(t, hex.EncodeToString(sum[:]), Hash(k))
		require.Equal(t, hex.EncodeToString(sum[:6]), IDOf(Hash(k)), "the id is the hash's first 6 bytes")
	}
	k, _ := New()
	for _, bad := range []string{"", "YourApiKeyToken", k[3:], "tl_short", k + "A", k[:Len-1] + "*", "TL_" + k[3:]} {
		err := Check(bad)
		require.ErrorIs(t, err, ErrMalformed, "%q", bad)
	}
}

func openStore(t *testing.T) *storage.ClickHouse {
	t.Helper()
	ctx := context.Background()
	st, err := storage.Open(ctx, config.ClickHouse{Addr: testCH.Addr, Protocol: testCH.Protocol, Database: testkit.Database(t, "k_"), QueryTimeout: time.Minute},
		zap.NewNop())
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	require.NoError(t, st.Migrate(ctx))
	return st
}

// create, update and revoke over the real table; bad input is refused
// and stores nothing.
func TestManageKeys(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)

	c, err := Create(ctx, st.Records(), "partner a", Limits{Rate: 5, Burst: 10})
	require.NoError(t, err)
	require.NoError(t, Check(c.Key))
	require.Equal(t, Hash(c.Key), c.Record.KeyHash)
	require.Equal(t, IDOf(Hash(c.Key)), c.Record.ID)
	_, err = Create(ctx, st.Records(), "partner b", DefaultLimits)
	require.NoError(t, err)

	for _, bad := range []struct {
		name string
		l    Limits
		want string
	}{
		{"", DefaultLimits, "name"},
		{"x\n", DefaultLimits, "name"},
		{strings.Repeat("n", 101), DefaultLimits, "name"},
		{"ok", Limits{Rate: -1, Burst: 1}, "--rate"},
		{"ok", Limits{Rate: 1, Burst: 0}, "--burst"},
	} {
		_, err := Create(ctx, st.Records(), bad.name, bad.l)
		require.ErrorContains(t, err, bad.want)
	}

	zero, three, none := 0.0, uint32(3), uint32(0)
	rec, err := SetLimits(ctx, st.Records(), c.Record.ID, LimitChange{Rate: &zero})
	require.NoError(t, err)
	require.Zero(t, rec.Rate)
	require.Equal(t, uint32(10), rec.Burst, "a limit not given is kept")
	rec, err = SetLimits(ctx, st.Records(), c.Record.ID, LimitChange{Burst: &three})
	require.NoError(t, err)
	require.Zero(t, rec.Rate)
	require.Equal(t, uint32(3), rec.Burst)
	_, err = SetLimits(ctx, st.Records(), c.Record.ID, LimitChange{Burst: &none})
	require.ErrorContains(t, err, "--burst")
	_, err = SetLimits(ctx, st.Records(), c.Record.ID, LimitChange{})
	require.Error(t, err)
	_, err = SetLimits(ctx, st.Records(), "000000000000", LimitChange{Burst: &three})
	var nf *NotFoundError
	require.ErrorAs(t, err, &nf)

	rec, already, err := Revoke(ctx, st.Records(), c.Record.ID)
	require.NoError(t, err)
	require.False(t, already)
	require.True(t, rec.Revoked)
	_, already, err = Revoke(ctx, st.Records(), c.Record.ID)
	require.NoError(t, err)
	require.True(t, already)
	_, err = SetLimits(ctx, st.Records(), c.Record.ID, LimitChange{Rate: &zero})
	var re *RevokedError
	require.True(t, errors.As(err, &re), "%v", err)

	_, _, err = Revoke(ctx, st.Records(), "000000000000")
	require.True(t, errors.As(err, &nf), "%v", err)

	all, err := List(ctx, st.Records())
	require.NoError(t, err)
	require.Len(t, all, 2)
	for _, r := range all {
		if r.ID == c.Record.ID {
			require.True(t, r.Revoked)
			require.Equal(t, uint32(3), r.Burst, "a revocation keeps the key's last limits")
			require.Equal(t, "partner a", r.Name)
		} else {
			require.False(t, r.Revoked)
			require.Equal(t, DefaultLimits.Rate, r.Rate)
		}
	}
}
