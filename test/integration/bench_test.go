package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/loadgen"
	"github.com/tideline-dev/tideline/pkg/localstack"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// BenchmarkHeadScanLiveBlocks measures normal operation on the real stack:
// one HeadScan that finds 8 new blocks and starts their IndexBlockWorkflows
// directly (seed target: well under a second).
func BenchmarkHeadScanLiveBlocks(b *testing.B) {
	// The function runs more than once (b.N = 1 first): a chain ID of its
	// own per run keeps an earlier run's rows and schedules out.
	chainID := fmt.Sprintf("bench-live-%d", time.Now().UnixNano())
	const newBlocks = 8
	node, err := localstack.StartAnvil(filepath.Join(stack.dir, chainID), localstack.AnvilOptions{})
	require.NoError(b, err)
	b.Cleanup(node.Stop)
	gen, err := loadgen.New(context.Background(), node.HTTPURL, zap.NewNop(), loadgen.Config{PrivateKey: localstack.AnvilDefaultKey})
	require.NoError(b, err)
	b.Cleanup(gen.Close)

	cfg := chainConfig(chainID, node.HTTPURL)
	ch := cfg.Chains[chainID]
	ch.HeadScan.Interval = time.Hour // the benchmark runs the scans itself
	cfg.Chains[chainID] = ch
	runWorker(b, cfg)
	tc, err := client.Dial(client.Options{HostPort: stack.temporal.HostPort, Namespace: "default"})
	require.NoError(b, err)
	b.Cleanup(tc.Close)

	scan := func(i int) types.HeadScanResult {
		run, err := tc.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{
			ID:        fmt.Sprintf("%s:bench-headscan:%d:%d", chainID, time.Now().UnixNano(), i),
			TaskQueue: temporal.AdminQueue(chainID),
		}, temporal.HeadScanWorkflow, types.HeadScanInput{ChainID: chainID})
		require.NoError(b, err)
		var res types.HeadScanResult
		require.NoError(b, run.Get(context.Background(), &res))
		return res
	}
	// Settle: index what exists so each measured scan sees only new blocks.
	storeB := openStore(b)
	head := scan(-1).Head
	waitIndexed(b, storeB, chainID, head, 5*time.Minute)

	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		require.NoError(b, gen.MineEmpty(context.Background(), newBlocks))
		b.StartTimer()
		res := scan(i)
		b.StopTimer()
		require.Equal(b, types.ModeNormal, res.Mode)
		require.Equal(b, newBlocks, res.Started, "scan %d: %+v", i, res)
		waitIndexed(b, storeB, chainID, res.Head, 5*time.Minute)
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/scan")
	b.ReportMetric(float64(newBlocks*b.N)/b.Elapsed().Seconds(), "starts/s")
}

// BenchmarkCatchupEndToEnd measures a catch-up on the real stack: a backlog
// of 3,000 heights on anvil, through HeadScan → Scheduler → IndexBlock,
// until the watermark reaches the head. Run with -benchtime 1x.
func BenchmarkCatchupEndToEnd(b *testing.B) {
	const backlog = 3000
	for i := 0; i < b.N; i++ {
		chainID := fmt.Sprintf("bench-catchup-%d-%d", time.Now().Unix(), i)
		b.StopTimer()
		node, err := localstack.StartAnvil(filepath.Join(stack.dir, chainID), localstack.AnvilOptions{})
		require.NoError(b, err)
		gen, err := loadgen.New(context.Background(), node.HTTPURL, zap.NewNop(), loadgen.Config{PrivateKey: localstack.AnvilDefaultKey})
		require.NoError(b, err)
		require.NoError(b, gen.MineEmpty(context.Background(), backlog))
		gen.Close()
		cfg := chainConfig(chainID, node.HTTPURL)
		ch := cfg.Chains[chainID]
		ch.Scheduler.RateLimit = 1000 // measure the stack, not the limiter
		ch.Scheduler.MaxInFlight = 1000
		cfg.Chains[chainID] = ch
		storeB := openStore(b)
		b.StartTimer()
		stop := startWorker(b, cfg)
		waitIndexed(b, storeB, chainID, backlog, 5*time.Minute)
		b.StopTimer()
		stop()
		node.Stop()
	}
	b.ReportMetric(float64(backlog+1)*float64(b.N)/b.Elapsed().Seconds(), "heights/s")
}
