package catchup

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/tideline-dev/tideline/pkg/localstack"
	"github.com/tideline-dev/tideline/pkg/temporal"
	"github.com/tideline-dev/tideline/test/benchcatchup/verify"
	"github.com/tideline-dev/tideline/test/internal/benchkit"
)

// check ends a measurement: it stops the chain's head, lets the last
// heights, the scheduler and the worker's writes finish, stops the worker
// and compares the database with the chain, filling in the rest of res.
func (b *bench) check(ctx context.Context, res result, headEnd uint64, sched *schedulerView, prof *profiler) (result, error) {
	// The measurement is over: stop the head and let the last heights and
	// the scheduler finish, so that the check sees a fixed chain and no
	// write still in flight.
	b.clock.Freeze()
	final := b.sim.Head()
	if !res.TimedOut {
		b.say("chain frozen at head %d; waiting for the last heights and the scheduler", final)
		if err := b.settle(ctx, final); err != nil {
			return result{}, err
		}
	}
	b.followScheduler(ctx, sched) // the last bucket and the scheduler's end
	if err := prof.wait(ctx); err != nil {
		return result{}, err
	}
	written := int64(-1)
	if m, err := scrape(ctx, b.metrics); err == nil {
		if v, ok := m["indexer_blocks_indexed_total"]; ok {
			written = int64(v)
		}
	} else {
		b.say("reading the worker's counters: %v", err)
	}
	// The check reads a database nobody writes to any more, and has the
	// CPU to itself.
	res.PeakRSSMiB = b.sampleRSS()
	cpu := b.cpuUse()
	b.worker.Stop()
	b.say("worker stopped")

	t := time.Now()
	v, err := verify.Chain(ctx, b.conn, b.sim, chainID, final, func(s string) { b.say("%s", s) })
	if err != nil {
		return result{}, err
	}
	res.Missing = v.Missing
	res.Duplicates = verify.Duplicates(written, v)
	if b.opts.Sets.Traced() {
		// With tracing on, a height marked without its traces is missing.
		untraced, frames, err := verify.Traces(ctx, b.conn, chainID, final)
		if err != nil {
			return result{}, err
		}
		res.Missing += untraced
		res.Frames = frames
		b.say("traces: %d call frames stored, %d heights of [0, %d] marked without their traces", frames, untraced, final)
	}
	b.say("checked [0, %d] against the chain in %.1fs: %d missing; %d blocks written (worker counter), %d heights with a block row; without FINAL %d block rows, %d indexed marks of %d heights",
		final, time.Since(t).Seconds(), v.Missing, written, v.DistinctBlocks, v.BlockRows, v.MarkRows, v.DistinctMarks)
	for _, s := range v.Bad {
		b.say("  %s", s)
	}
	if written >= 0 && uint64(written) < v.DistinctBlocks {
		b.say("note: the worker counted fewer blocks written (%d) than heights stored (%d): some write path does not count; duplicates rest on the row counts", written, v.DistinctBlocks)
	}

	if res.TimedOut {
		// The rate is of what got indexed.
		res.Heights = v.DistinctMarks
	} else {
		res.Heights = headEnd + 1
	}
	for h := uint64(0); h < res.Heights && h <= headEnd; h++ {
		e := b.sim.Expected(h)
		res.Txs += uint64(e.TxCount)
		res.Rows += 1 + uint64(e.TxCount) + uint64(e.LogCount)
	}
	res.Workflows = b.countWorkflows(ctx)
	res.CPU = cpu
	if len(cpu) > 0 && res.Heights > 0 {
		var parts []string
		for _, name := range []string{"clickhouse", "worker", "temporal"} {
			if s, ok := cpu[name]; ok {
				parts = append(parts, fmt.Sprintf("%s %.1f s (%.2f ms/height)", name, s, res.cpuMsPerHeight(name)))
			}
		}
		b.say("cpu from the start to the worker's stop: %s", strings.Join(parts, ", "))
	}
	b.measureDisk(ctx, &res)
	return res, nil
}

// cpuUse is the CPU time (user and system, seconds) each process of the
// run has used so far: ClickHouse, the worker and the Temporal dev server.
// Per height, it is what bounds the rate on a machine whose cores are all
// busy, and it changes far less than the rate when other work shares the
// machine.
func (b *bench) cpuUse() map[string]float64 {
	out := map[string]float64{}
	procs := map[string]*localstack.Process{"worker": b.worker}
	for name, p := range b.servers {
		procs[name] = p
	}
	for name, p := range procs {
		s, err := benchkit.CPUSeconds(p.Pid())
		if err != nil {
			b.say("cpu of %s: %v", name, err)
			continue
		}
		out[name] = s
	}
	return out
}

// settle waits (bounded) until the watermark reaches the frozen head, the
// scheduler has ended and the worker's write counter stands still.
func (b *bench) settle(ctx context.Context, head uint64) error {
	wait := func(what string, cond func() bool) error {
		deadline := time.Now().Add(settleTimeout)
		for !cond() {
			if time.Now().After(deadline) {
				b.say("still waiting for %s after %s; checking as is", what, settleTimeout)
				return nil
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(500 * time.Millisecond):
			}
		}
		return nil
	}
	err := wait(fmt.Sprintf("the watermark at %d", head), func() bool {
		wm, ok, err := b.store.Watermark(ctx, chainID, 0)
		return err == nil && ok && wm >= head
	})
	if err != nil {
		return err
	}
	err = wait("the scheduler to end", func() bool {
		desc, err := b.tc.DescribeWorkflowExecution(ctx, temporal.SchedulerID(chainID), "")
		if err != nil {
			return true // never started (a backlog below the catch-up threshold)
		}
		return desc.GetWorkflowExecutionInfo().GetStatus() != enums.WORKFLOW_EXECUTION_STATUS_RUNNING
	})
	if err != nil {
		return err
	}
	// Writes still in flight (a duplicate racing the check) show in the
	// counter: wait until it has not moved for three seconds.
	var last float64 = -1
	var since time.Time
	return wait("the worker's writes to stop", func() bool {
		m, err := scrape(ctx, b.metrics)
		if err != nil {
			return false
		}
		v := m["indexer_blocks_indexed_total"]
		if v != last {
			last, since = v, time.Now()
			return false
		}
		return time.Since(since) >= 3*time.Second
	})
}

// countWorkflows counts every workflow execution of the dev server, which
// this run started fresh: the IndexBlock (and IndexRange) workflows, the
// scheduler's runs, HeadScan and GapScan runs, open or closed.
func (b *bench) countWorkflows(ctx context.Context) int64 {
	qctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	total, err := b.tc.CountWorkflow(qctx, &workflowservice.CountWorkflowExecutionsRequest{Namespace: "default"})
	if err != nil {
		b.say("counting workflows: %v", err)
		return -1
	}
	var parts []string
	for _, wt := range []string{temporal.IndexBlockWorkflow, "IndexRange", temporal.SchedulerWorkflow, temporal.HeadScanWorkflow, temporal.GapScanWorkflow} {
		r, err := b.tc.CountWorkflow(qctx, &workflowservice.CountWorkflowExecutionsRequest{
			Namespace: "default", Query: fmt.Sprintf("WorkflowType = '%s'", wt)})
		if err == nil && r.GetCount() > 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", wt, r.GetCount()))
		}
	}
	b.say("workflow executions: %d (%s)", total.GetCount(), strings.Join(parts, " "))
	return total.GetCount()
}
