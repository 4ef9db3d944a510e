package tracebackfill

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	"go.uber.org/zap"
	"golang.org/x/time/rate"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/rpc"
	"github.com/tideline-dev/tideline/pkg/storage"
)

// The traces backfill: a chain indexed without traces (tracing was off,
// or turned on later) gets the traces of its indexed heights without its
// blocks being indexed again. A pass walks [floor, top] newest first, top
// the highest indexed height when it began: it reads the marks that say
// their traces are not in (storage.UntracedHeights), asks the node for
// those heights' traces only (rpc.FetchTraces, checked against the stored
// blocks' hashes), writes them with a traced mark (storage.WriteTraces)
// and saves where it is (chain_state), so each run of the TraceBackfill
// Schedule goes on from the last. The heights it traces per second are
// capped (traces.backfill.heights_per_second, per process).
//
// A pass that completes records its top (done): the next pass only covers
// the heights indexed since, unless a height's trace could not be had (the
// next pass then starts from the lowest such height) or tracing was off in
// between (Prepare: from the chain's first height again).

// traceBackfillScan is how many heights' marks one look for untraced
// heights covers: 100,000 narrow rows, a few milliseconds.
const traceBackfillScan = 100_000

// limiter caps the heights the backfill traces per second in this
// process (traces.backfill.heights_per_second).
func (j *Job) limiter() *rate.Limiter {
	j.rateOnce.Do(func() {
		per := j.Settings.Backfill.HeightsPerSecond
		j.rate = rate.NewLimiter(rate.Limit(per), max(1, int(per+0.999), j.Settings.Backfill.Batch))
	})
	return j.rate
}

// Prepare records in chain_state whether the chain's workers trace, at a
// chain's start, before its workers run (not an activity). A chain that
// starts tracing after it did not (or for the first time) has its
// backfill start over from its first height: heights indexed meanwhile,
// anywhere, lack their traces.
func (j *Job) Prepare(ctx context.Context) error {
	id := j.ChainID
	st, err := j.Store.TraceBackfillState(ctx, id)
	if err != nil {
		return err
	}
	switch {
	case j.Settings.Traces && !st.Enabled:
		for _, k := range []string{storage.StateTracesDone, storage.StateTracesNext, storage.StateTracesFailed} {
			if err := j.Store.SaveState(ctx, id, k, 0); err != nil {
				return err
			}
		}
		j.logger().Info("traces on: the traces backfill covers every indexed height again")
		return j.Store.SaveState(ctx, id, storage.StateTracesEnabled, 1)
	case !j.Settings.Traces && st.Enabled:
		return j.Store.SaveState(ctx, id, storage.StateTracesEnabled, 0)
	}
	return nil
}

// BackfillTraces fills traces for up to Budget, from where the pass under
// way stopped (or a new pass), heartbeating its result. An error leaves
// what was written and saved; Temporal retries.
func (j *Job) BackfillTraces(ctx context.Context, in Input) (Result, error) {
	id := j.ChainID
	var res Result
	if !j.Settings.Traces {
		res.Skipped = "tracing is off"
		return res, nil
	}
	fail := func(what string, err error) (Result, error) {
		return res, fmt.Errorf("chain %s: traces backfill: %s: %w", id, what, err)
	}
	st, err := j.Store.TraceBackfillState(ctx, id)
	if err != nil {
		return fail("reading its state", err)
	}
	if !st.Running() {
		last, found, err := j.Store.LastIndexed(ctx, id)
		if err != nil {
			return fail("the highest indexed height", err)
		}
		floor, err := j.Progress.Floor(ctx)
		if err != nil {
			return fail("the floor", err)
		}
		floor = max(floor, st.Done)
		if !found || floor > last {
			res.Skipped, res.Done = "every indexed height is traced", st.Done
			return res, nil
		}
		st = storage.TraceBackfill{Enabled: true, Top: last, Floor: floor, Next: last + 1, Done: st.Done}
		if err := j.saveBackfill(ctx, st, true); err != nil {
			return fail("starting a pass", err)
		}
		j.logger().Info("traces backfill: pass started", zap.Uint64("top", last), zap.Uint64("floor", floor))
	}
	deadline := time.Now().Add(Budget)
	batch := max(j.Settings.Backfill.Batch, 1)
	for st.Next > st.Floor && time.Now().Before(deadline) && ctx.Err() == nil {
		hi := st.Next - 1
		lo := st.Floor
		if hi-lo >= traceBackfillScan {
			lo = hi - traceBackfillScan + 1
		}
		hs, err := j.Store.UntracedHeights(ctx, id, lo, hi, batch)
		if err != nil {
			return fail("reading untraced heights", err)
		}
		if len(hs) < batch {
			st.Next = lo // every untraced height of [lo, hi] is in hs
		} else {
			st.Next = hs[len(hs)-1]
		}
		if len(hs) > 0 {
			if err := j.backfillHeights(ctx, hs, &st, &res); err != nil {
				return fail(fmt.Sprintf("heights %d-%d", hs[len(hs)-1], hs[0]), err)
			}
		}
		if err := j.saveBackfill(ctx, st, false); err != nil {
			return fail("saving its progress", err)
		}
		res.Running, res.Top, res.Floor, res.Next = true, st.Top, st.Floor, st.Next
		activity.RecordHeartbeat(ctx, res)
	}
	if st.Next <= st.Floor {
		st.Done = st.Top + 1
		if st.Failed > 0 {
			st.Done = st.Failed - 1 // the next pass asks again from there
		}
		st.Next, st.Failed = 0, 0
		if err := j.saveBackfill(ctx, st, true); err != nil {
			return fail("ending its pass", err)
		}
		j.logger().Info("traces backfill: pass done", zap.Uint64("top", st.Top), zap.Uint64("floor", st.Floor),
			zap.Uint64("done", st.Done))
	}
	res.Running, res.Top, res.Floor, res.Next, res.Done = st.Running(), st.Top, st.Floor, st.Next, st.Done
	return res, ctx.Err()
}

// backfillHeights traces heights (descending) and writes what came back;
// heights that failed stay untraced, the lowest remembered in st.
func (j *Job) backfillHeights(ctx context.Context, hs []uint64, st *storage.TraceBackfill, res *Result) error {
	id := j.ChainID
	targets, err := j.Store.TraceTargets(ctx, id, hs)
	if err != nil {
		return err
	}
	blocks := make([]*chaindata.BlockData, 0, len(hs))
	for _, h := range hs {
		if d := targets[h]; d != nil {
			blocks = append(blocks, d) // a height without a canonical block has nothing to trace
		}
	}
	if len(blocks) == 0 {
		return nil
	}
	if err := j.limiter().WaitN(ctx, len(blocks)); err != nil {
		return err
	}
	errs := rpc.FetchTraces(ctx, j.RPC, blocks)
	if err := ctx.Err(); err != nil {
		return err
	}
	traced := blocks[:0:0]
	for i, d := range blocks {
		if errs[i] == nil {
			traced = append(traced, d)
			continue
		}
		res.Failed++
		j.Metrics.Failures.WithLabelValues(id).Inc()
		if st.Failed == 0 || d.Block.Number+1 < st.Failed {
			st.Failed = d.Block.Number + 1
		}
		j.logger().Warn("traces backfill: no trace for this height; its next pass asks again",
			zap.Uint64("height", d.Block.Number), zap.Error(errs[i]))
	}
	if len(traced) == 0 {
		return nil
	}
	skipped, err := j.Store.WriteTraces(ctx, id, traced)
	if err != nil {
		return err
	}
	frames := 0
	for _, d := range traced {
		frames += len(d.Traces)
	}
	n := uint64(len(traced) - len(skipped))
	res.Traced += n
	res.Frames += uint64(frames)
	j.Metrics.Backfilled.WithLabelValues(id).Add(float64(n))
	if j.Metrics.Written != nil {
		j.Metrics.Written.WithLabelValues(id).Add(float64(frames))
	}
	return nil
}

// saveBackfill saves the pass's position (and, with all, its bounds).
func (j *Job) saveBackfill(ctx context.Context, st storage.TraceBackfill, all bool) error {
	type kv struct {
		k string
		v uint64
	}
	keys := []kv{{storage.StateTracesNext, st.Next}, {storage.StateTracesFailed, st.Failed}}
	if all {
		keys = append(keys, kv{storage.StateTracesTop, st.Top}, kv{storage.StateTracesFloor, st.Floor}, kv{storage.StateTracesDone, st.Done})
	}
	for _, x := range keys {
		if err := j.Store.SaveState(ctx, j.ChainID, x.k, x.v); err != nil {
			return err
		}
	}
	return nil
}

// logger is the job's logger with the chain named.
func (j *Job) logger() *zap.Logger { return j.Log.With(zap.String("chain_id", j.ChainID)) }
