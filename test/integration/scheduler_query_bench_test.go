package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/tideline-dev/tideline/pkg/localstack"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// BenchmarkSchedulerProgressQuery measures how long the Scheduler takes to
// answer its progress query (what `indexer status` asks) while it catches
// a chain up as fast as it can start work: single heights in batches of
// 10, no rate or in-flight cap below what the worker manages, so that its
// starts, not a timer, pace it. A query waits for the workflow task under
// way, so its latency is the length of the scheduler's tasks. Reports the
// median, 95th percentile and largest latency of queries asked every
// 200 ms, at most 100 of them, while the catch-up runs, and the catch-up's
// rate (heights from the scheduler's start until the watermark reaches
// the head, queries and all) so that a change to the scheduler's tasks is
// seen in both. Run with -benchtime 1x; pin it (taskset) to see it on a
// loaded box.
func BenchmarkSchedulerProgressQuery(b *testing.B) {
	const backlog, maxQueries = 2000, 100
	var lat []time.Duration
	var catchup time.Duration
	for i := 0; i < b.N; i++ {
		chainID := fmt.Sprintf("bench-query-%d-%d", time.Now().Unix(), i)
		node, err := localstack.StartAnvil(filepath.Join(stack.dir, chainID), localstack.AnvilOptions{})
		require.NoError(b, err)
		require.NoError(b, nodeClient(b, node.HTTPURL).CallContext(context.Background(), nil, "anvil_mine", hexutil.Uint64(backlog)))
		cfg := chainConfig(chainID, node.HTTPURL)
		ch := cfg.Chains[chainID]
		ch.HeadScan.CatchupThreshold = 200
		ch.Scheduler.RangeSize, ch.Scheduler.BatchSize = 0, 10
		ch.Scheduler.RateLimit, ch.Scheduler.HeightsPerSecond, ch.Scheduler.MaxInFlight = 100_000, 0, 2000
		cfg.Chains[chainID] = ch
		tc := temporalClient(b)
		store := openStore(b)
		began := time.Now()
		stop := startWorker(b, cfg)
		id := temporal.SchedulerID(chainID)
		waitFor(b, time.Minute, "the catch-up running", func() (bool, string) {
			d, err := tc.DescribeWorkflowExecution(context.Background(), id, "")
			if err != nil {
				return false, err.Error()
			}
			st := d.GetWorkflowExecutionInfo().GetStatus()
			return st == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, st.String()
		})
		for q := 0; q < maxQueries; q++ {
			d, err := tc.DescribeWorkflowExecution(context.Background(), id, "")
			require.NoError(b, err)
			if d.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
				break
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			asked := time.Now()
			_, err = tc.QueryWorkflow(ctx, id, "", temporal.SchedulerProgressQuery)
			cancel()
			if err != nil {
				break // the run ended (or continued as new) between the two calls
			}
			lat = append(lat, time.Since(asked))
			time.Sleep(200 * time.Millisecond) // the query pace, not a wait for a condition
		}
		waitIndexed(b, store, chainID, backlog, 15*time.Minute)
		catchup += time.Since(began)
		stop()
		node.Stop()
	}
	require.NotEmpty(b, lat, "no query was answered while the catch-up ran")
	slices.Sort(lat)
	at := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(at(0.5), "p50-ms")
	b.ReportMetric(at(0.95), "p95-ms")
	b.ReportMetric(at(1), "max-ms")
	b.ReportMetric(float64(len(lat)), "queries")
	b.ReportMetric(float64(backlog+1)*float64(b.N)/catchup.Seconds(), "heights/s")
}
