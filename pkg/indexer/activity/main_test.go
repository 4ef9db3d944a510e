package activity_test

import (
	"context"
	"os"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/internal/testkit"
	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/indexer/activity"
	"github.com/tideline-dev/tideline/pkg/localstack"
	"github.com/tideline-dev/tideline/pkg/metrics"
	"github.com/tideline-dev/tideline/pkg/storage"
)

// clickhouse is the real server the activities' storage calls go to.
var clickhouse *localstack.ClickHouse

// TestMain starts ClickHouse once; a missing binary fails the run.
func TestMain(m *testing.M) { os.Exit(testkit.RunWithClickHouse(m, "activity", &clickhouse)) }

// newActivities returns activities over a fresh database of their own.
func newActivities(t *testing.T, chainID string, start uint64) (*activity.Activities, *storage.ClickHouse) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.QueryBound)
	defer cancel()
	db := testkit.Database(t, "a_")
	store, err := storage.Open(ctx, config.ClickHouse{Addr: clickhouse.Addr, Protocol: clickhouse.Protocol, Database: db, QueryTimeout: testkit.QueryBound}, zap.NewNop())
	require.NoError(t, err)
	require.NoError(t, store.Migrate(ctx))
	t.Cleanup(func() { store.Close() })
	return &activity.Activities{
		Chain:   activity.ChainSetup{ID: chainID, StartHeight: start},
		Store:   store,
		Metrics: metrics.New(prometheus.NewRegistry()),
		Log:     zap.NewNop(),
	}, store
}
