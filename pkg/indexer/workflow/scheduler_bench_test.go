package workflow_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
)

// BenchmarkSchedulerSimulation measures the scheduling throughput of the
// SchedulerWorkflow in the SDK's test environment: a 100k-height catch-up
// (100000..1 ↓, 100 per batch, 100/s, CAN every 10k → 10 runs), every
// activity a fake. Workflow time is simulated; the metrics are wall time:
//
//	heights/s  heights scheduled per second of wall time
//	ns/height  wall time per scheduled height
//
// `make bench-scheduler` runs it with -benchtime 3x.
func BenchmarkSchedulerSimulation(b *testing.B) {
	const head = 100_000
	wfs := newWorkflows(chainConfig(nil))
	in := types.SchedulerInput{ChainID: chainID, Head: head, Remaining: []chaindata.HeightRange{{From: 1, To: head}}}
	var heights uint64
	var wall time.Duration
	runs := 0
	for b.Loop() {
		r := newRecorder(head)
		r.descending = true
		began := time.Now()
		out := runScheduler(b, wfs, in, t0, r, schedOpts{})
		wall += time.Since(began)
		require.NoError(b, r.err)
		require.Equal(b, uint64(head), r.total)
		heights += r.total
		runs = len(out.Runs)
	}
	b.ReportMetric(float64(heights)/wall.Seconds(), "heights/s")
	b.ReportMetric(float64(wall.Nanoseconds())/float64(heights), "ns/height")
	b.ReportMetric(float64(runs), "runs/op")
}

// BenchmarkRangeSchedulerSimulation is BenchmarkSchedulerSimulation with
// ranges (range_size 1000, 64 single heights): a 1M-height catch-up, the
// ranges indexed at once (CountIndexed says all done), so the figure is
// the scheduler's own cost per height in the SDK's test environment.
func BenchmarkRangeSchedulerSimulation(b *testing.B) {
	const head = 1_000_000
	wfs := newWorkflows(rangeConfig(nil))
	in := types.SchedulerInput{ChainID: chainID, Head: head, Remaining: []chaindata.HeightRange{{From: 1, To: head}}}
	var heights uint64
	var wall time.Duration
	runs := 0
	for b.Loop() {
		r := newRecorder(head)
		r.descending = true
		w := newRangeWorkers(1000, 0, false)
		began := time.Now()
		out := runScheduler(b, wfs, in, t0, r, schedOpts{hook: w.run(r), count: r.allIndexed})
		wall += time.Since(began)
		require.NoError(b, r.err)
		require.Equal(b, uint64(head), r.total)
		heights += r.total
		runs = len(out.Runs)
	}
	b.ReportMetric(float64(heights)/wall.Seconds(), "heights/s")
	b.ReportMetric(float64(wall.Nanoseconds())/float64(heights), "ns/height")
	b.ReportMetric(float64(runs), "runs/op")
}
