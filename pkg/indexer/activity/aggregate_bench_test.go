package activity_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	sdkactivity "go.temporal.io/sdk/activity"

	chgo "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/internal/testkit"
	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/indexer/activity"
	"github.com/tideline-dev/tideline/pkg/indexer/jobs/aggregate"
	"github.com/tideline-dev/tideline/pkg/metrics"
	"github.com/tideline-dev/tideline/pkg/storage"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// BenchmarkAggregateCatchUp times the Aggregate activity counting a chain
// of a million indexed heights from nothing, in chunks of
// aggregator.chunk (10,000, the default): the catch-up of an aggregator
// that starts on a chain indexed before it existed. The blocks (a linked
// chain, 0-4 transactions each) and their marks are made on the server
// with INSERT … SELECT before the timer runs; each iteration counts a
// chain of its own. Reports heights counted per second.
//
//	go test -run '^$' -bench BenchmarkAggregateCatchUp -benchtime 2x ./pkg/indexer/activity/
func BenchmarkAggregateCatchUp(b *testing.B) {
	const heights = 1_000_000
	ctx := context.Background()
	db := testkit.Database(b, "a_")
	store, err := storage.Open(ctx, config.ClickHouse{Addr: clickhouse.Addr, Protocol: clickhouse.Protocol, Database: db, QueryTimeout: 10 * time.Minute}, zap.NewNop())
	require.NoError(b, err)
	require.NoError(b, store.Migrate(ctx))
	b.Cleanup(func() { store.Close() })
	conn, err := chgo.Open(&chgo.Options{Addr: []string{clickhouse.Addr}, Auth: chgo.Auth{Database: db},
		Settings: chgo.Settings{"max_execution_time": 600}})
	require.NoError(b, err)
	b.Cleanup(func() {
		require.NoError(b, conn.Exec(context.Background(), "DROP DATABASE "+db))
		conn.Close()
	})
	ch := config.DefaultChain()
	var counted uint64
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		chainID := fmt.Sprintf("bench%d", i)
		for _, q := range []string{
			`INSERT INTO blocks (chain_id, number, hash, parent_hash, timestamp, miner, gas_used, gas_limit, base_fee_per_gas, size, tx_count, log_count, raw, version)
			 SELECT ?, number, concat('0x', toString(number)), if(number = 0, '', concat('0x', toString(number - 1))),
			        toDateTime(1700000000 + number), '0x', 0, 30000000, '', 500 + number % 1000, toUInt32(number % 5), toUInt32(number % 7), '{}', 1
			 FROM numbers(?)`,
			`INSERT INTO indexed_heights (chain_id, number, hash, indexed_at, version)
			 SELECT ?, number, concat('0x', toString(number)), toDateTime(1700000000), 1 FROM numbers(?)`,
		} {
			require.NoError(b, conn.Exec(ctx, q, chainID, heights))
		}
		acts := &activity.Activities{
			Chain: activity.NewChainSetup(chainID, nil, temporal.NewOptions(chainID, time.Minute), ch),
			Store: store, Metrics: metrics.New(prometheus.NewRegistry()), Log: zap.NewNop(),
		}
		agg := &aggregate.Job{
			ChainID: chainID, Settings: aggregate.SettingsOf(ch), Options: acts.Chain.Options, Store: store.Aggregates(), Progress: acts,
			Metrics: aggregate.NewMetrics(prometheus.NewRegistry()), Log: zap.NewNop(),
		}
		var suite testsuite.WorkflowTestSuite
		env := suite.NewTestActivityEnvironment()
		env.RegisterActivityWithOptions(agg.Aggregate, sdkactivity.RegisterOptions{Name: aggregate.ActivityName})
		b.StartTimer()
		v, err := env.ExecuteActivity(aggregate.ActivityName, aggregate.Input{ChainID: chainID})
		require.NoError(b, err)
		var res aggregate.Result
		require.NoError(b, v.Get(&res))
		require.Equal(b, uint64(heights), res.Counted, "%+v", res)
		require.False(b, res.More, "counted within one attempt's budget")
		counted += res.Counted
	}
	b.ReportMetric(float64(counted)/b.Elapsed().Seconds(), "heights/s")
}
