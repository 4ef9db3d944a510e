package activity

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/tideline-dev/tideline/internal/wait"
	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/rpc"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// How a range treats heights that fail. The fetch is pkg/rpc's alone: it
// batches, retries transient failures (rpc.max_attempts attempts on each
// endpoint, the endpoints in turn) and checks every answer, so a height
// that comes back failed has had its retries. What still fails is handed
// to its own IndexBlockWorkflow when it is plainly the height's fault: a
// malformed answer, a block the node does not have, or a write that fails
// while the other heights of its chunk are written. Failures the activity
// cannot tell from an outage (transport errors, a whole chunk's write)
// fail the attempt instead, and Temporal retries the range: a node or
// database outage must not turn one range into a thousand single-height
// workflows. Two bounds keep a range from retrying forever on a few bad
// heights: up to handoffCap failures are always handed off, and from
// attempt handoffAttempt on, so are any number of height-specific ones
// once other heights of the range are indexed.
//
// A chunk's write is tried writeTries times (backoff from writeBackoff)
// before it is bisected, so that a brief refusal of the database does not
// throw a fetched chunk away; the database client has no retries of its
// own.
const (
	handoffCap     = 8
	handoffAttempt = 3
	writeTries     = 3
	writeBackoff   = 250 * time.Millisecond
)

// IndexRange indexes the heights of a range that are not indexed yet. It
// asks the database which those are and goes through them in ascending
// chunks of index.write_batch heights, fewer for heavy blocks
// (index.write_batch_rows, range_chunks.go): each chunk is fetched with one
// rpc.FetchBlocks call (pkg/rpc batches it: rpc.fetch_batch heights per
// request, rpc.fetch_concurrency in flight) and written with one bulk
// write, the next chunk fetched while one is written. It heartbeats its
// progress, so a retry (the database is asked again) resumes where it was
// and counts what earlier attempts wrote. Heights that keep failing come
// back in the result's Failed (see handoffCap).
//
// Ranges cover only heights at least scheduler.single_heights below the
// head, which config validation keeps at or above the confirmation depth:
// no reorganisation reaches them, so no reorg check is made here.
func (a *Activities) IndexRange(ctx context.Context, in types.IndexRangeInput) (types.IndexRangeResult, error) {
	chainID := a.Chain.ID
	if in.Range.From > in.Range.To {
		return types.IndexRangeResult{}, fmt.Errorf("chain %s: range [%d, %d] is empty", chainID, in.Range.From, in.Range.To)
	}
	began := time.Now()
	info := activity.GetInfo(ctx)
	r := &rangeRun{
		a: a, chainID: chainID, rg: in.Range, writeBatch: max(a.Chain.WriteBatch, 1),
		log: a.logger().With(zap.Uint64("from", in.Range.From), zap.Uint64("to", in.Range.To),
			zap.Int32("attempt", info.Attempt)),
		failed: map[uint64]heightFailure{},
	}
	if activity.HasHeartbeatDetails(ctx) {
		// Only counters: which heights are done, the database says.
		_ = activity.GetHeartbeatDetails(ctx, &r.prior)
	}
	stop := r.heartbeatEvery(ctx, temporal.HeartbeatPeriod(info.HeartbeatTimeout))
	res, err := r.run(ctx, info.Attempt)
	stop()
	a.Metrics.RangeDuration.WithLabelValues(chainID).Observe(time.Since(began).Seconds())
	if err != nil {
		r.log.Warn("range attempt failed; Temporal retries it", zap.Error(err))
		return types.IndexRangeResult{}, err
	}
	r.log.Info("range indexed", zap.Uint64("indexed", res.Indexed), zap.Uint64("skipped", res.Skipped),
		zap.Int("failed", len(res.Failed)), zap.Duration("took", time.Since(began)))
	return res, nil
}

// rangeRun is one attempt of a range activity.
type rangeRun struct {
	a          *Activities
	chainID    string
	rg         chaindata.HeightRange
	writeBatch int
	log        *zap.Logger
	prior      types.RangeProgress // earlier attempts, from the heartbeat

	mu       sync.Mutex
	progress types.RangeProgress // this attempt
	failed   map[uint64]heightFailure
}

// heightFailure is why a height failed in this attempt; specific is true
// when it is plainly the height's fault (see handoffCap).
type heightFailure struct {
	err      error
	reason   string
	specific bool
}

func (r *rangeRun) run(ctx context.Context, attempt int32) (types.IndexRangeResult, error) {
	n := r.rg.Len()
	missing, err := r.a.Store.MissingHeights(ctx, r.chainID, r.rg.From, r.rg.To, int(n))
	if err != nil {
		return types.IndexRangeResult{}, writeFailure(fmt.Sprintf("chain %s range [%d, %d]: indexed heights", r.chainID, r.rg.From, r.rg.To), err)
	}
	skipped := n - uint64(len(missing))
	if len(missing) > 0 {
		if err := r.pipeline(ctx, missing); err != nil {
			return types.IndexRangeResult{}, err
		}
	}
	res := types.IndexRangeResult{
		Indexed: r.prior.Indexed + r.progress.Indexed,
		Txs:     r.prior.Txs + r.progress.Txs,
		Logs:    r.prior.Logs + r.progress.Logs,
		// What earlier attempts wrote is not "found indexed".
		Skipped: skipped - min(skipped, r.prior.Indexed),
	}
	if len(r.failed) == 0 {
		return res, nil
	}
	return r.handOff(res, attempt, skipped+r.progress.Indexed > 0)
}

// handOff decides, for the heights that failed, between handing them off
// (in the result) and failing the attempt (see handoffCap).
func (r *rangeRun) handOff(res types.IndexRangeResult, attempt int32, othersIndexed bool) (types.IndexRangeResult, error) {
	hs := make([]uint64, 0, len(r.failed))
	unspecific := 0
	for h, f := range r.failed {
		hs = append(hs, h)
		if !f.specific {
			unspecific++
		}
	}
	slices.Sort(hs)
	slices.Reverse(hs)
	first := r.failed[hs[0]]
	hand := false
	switch {
	case unspecific > 0:
		// Indistinguishable from an outage: only a few, and only once
		// the range was retried a few times.
		hand = len(hs) <= handoffCap && attempt >= handoffAttempt
	default:
		hand = len(hs) <= handoffCap || (attempt >= handoffAttempt && othersIndexed)
	}
	if !hand {
		msg := fmt.Sprintf("chain %s range [%d, %d]: %d heights failed (%d not plainly the height's fault), e.g. height %d: %v",
			r.chainID, r.rg.From, r.rg.To, len(hs), unspecific, hs[0], first.err)
		if first.reason == ErrTypeStorage {
			return types.IndexRangeResult{}, writeFailure(msg, first.err)
		}
		return types.IndexRangeResult{}, fetchFailure(msg, first.err)
	}
	for _, h := range hs {
		f := r.failed[h]
		res.Failed = append(res.Failed, types.FailedHeight{Height: h, Reason: f.reason})
		r.a.Metrics.RangeHandoffs.WithLabelValues(r.chainID, f.reason).Inc()
		r.log.Error("height keeps failing; handed to its own IndexBlockWorkflow",
			zap.Uint64("height", h), zap.String("reason", f.reason), zap.Error(f.err))
	}
	return res, nil
}

// pipeline fetches chunk k+1 while chunk k is written. A write error that
// is not one height's fault ends the attempt; so does a chunk of which no
// height could be fetched for reasons that look like an outage.
func (r *rangeRun) pipeline(ctx context.Context, heights []uint64) error {
	// Unbuffered: the next chunk is fetched while one is written, and no
	// more, so an activity holds at most two chunks of blocks.
	fetched := make(chan []*chaindata.BlockData)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		defer close(fetched)
		for left := heights; len(left) > 0; {
			// Sized when it is fetched, from the last chunk's rows
			// (range_chunks.go).
			est, known := r.a.rowsPerHeight.get()
			hs := left[:chunkLen(len(left), r.writeBatch, r.a.Chain.WriteBatchRows, est, known)]
			left = left[len(hs):]
			began := time.Now()
			blocks, err := r.fetchChunk(gctx, hs)
			if err != nil {
				return err
			}
			r.a.rowsPerHeight.record(blocks)
			r.log.Debug("chunk fetched", zap.Int("heights", len(hs)), zap.Duration("took", time.Since(began)))
			select {
			case fetched <- blocks:
			case <-gctx.Done():
				return gctx.Err()
			}
		}
		return nil
	})
	g.Go(func() error {
		for blocks := range fetched {
			began := time.Now()
			if err := r.writeChunk(gctx, blocks); err != nil {
				return err
			}
			r.log.Debug("chunk written", zap.Int("heights", len(blocks)), zap.Duration("took", time.Since(began)))
		}
		return nil
	})
	return g.Wait()
}

// fetchChunk fetches a chunk's heights with one rpc.FetchBlocks call (one
// result per height, in order, each with its own error). Heights that
// failed are recorded; the others' blocks are returned, ascending.
func (r *rangeRun) fetchChunk(ctx context.Context, heights []uint64) ([]*chaindata.BlockData, error) {
	results := rpc.FetchBlocks(ctx, r.a.Chain.RPC, heights)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	blocks := make([]*chaindata.BlockData, 0, len(results))
	errs := map[uint64]error{}
	for _, res := range results {
		if res.Err == nil {
			res.Err = r.a.requireTraces(res.Data)
		}
		if res.Err != nil {
			errs[res.Height] = res.Err
			r.a.Metrics.IndexErrors.WithLabelValues(r.chainID, stageFetch).Inc()
			continue
		}
		blocks = append(blocks, res.Data)
	}
	if len(blocks) == 0 && len(errs) > 0 {
		// Nothing of the chunk came back: an outage unless every error is
		// the height's own (then they are handed off like any other), or
		// the node answers its head: a height it cannot serve in time (a
		// slow trace) left alone in the chunk by an earlier attempt.
		for _, h := range heights {
			if e := errs[h]; !heightSpecific(e) {
				if _, err := r.a.Chain.RPC.HeadHeight(ctx); err == nil {
					break
				}
				return nil, fetchFailure(fmt.Sprintf("chain %s range [%d, %d]: no height of chunk [%d, %d] could be fetched, e.g. height %d",
					r.chainID, r.rg.From, r.rg.To, heights[0], heights[len(heights)-1], h), e)
			}
		}
	}
	r.mu.Lock()
	for h, e := range errs {
		r.failed[h] = heightFailure{err: e, reason: fetchReason(e), specific: heightSpecific(e)}
	}
	r.mu.Unlock()
	return blocks, nil
}

// writeChunk writes a chunk with one bulk write (storage.WriteBlocks: one
// insert per table, the indexed marks last), tried writeTries times. If
// it still fails, the chunk is split in halves, recursively, to
// isolate the heights at fault: a height whose write fails while another
// of the chunk is written is recorded as failed (its own fault). If no
// height of the chunk can be written, the database is down: the attempt
// fails.
func (r *rangeRun) writeChunk(ctx context.Context, blocks []*chaindata.BlockData) error {
	if len(blocks) == 0 {
		return nil
	}
	// A held chain fails the attempt; Temporal retries the range.
	if err := r.a.heldWrites(ctx); err != nil {
		return writeFailure(fmt.Sprintf("chain %s range [%d, %d]: writes held", r.chainID, r.rg.From, r.rg.To), err)
	}
	var err error
	// Retried here, not by Temporal: the range's retry would fetch the
	// chunk again, and a brief refusal must not reach the bisection, which
	// would blame single heights for it.
	for try := 1; try <= writeTries; try++ {
		if try > 1 {
			if err := wait.For(ctx, writeBackoff<<(try-2)); err != nil {
				return err
			}
		}
		if err = r.a.Store.WriteBlocks(ctx, r.chainID, blocks); err == nil {
			r.written(blocks)
			return nil
		}
		r.a.Metrics.IndexErrors.WithLabelValues(r.chainID, stageWrite).Inc()
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	if len(blocks) == 1 {
		return writeFailure(fmt.Sprintf("chain %s range [%d, %d]: write height %d", r.chainID, r.rg.From, r.rg.To, blocks[0].Block.Number), err)
	}
	bad := map[uint64]error{}
	wrote := r.bisect(ctx, blocks, bad)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if wrote == 0 {
		return writeFailure(fmt.Sprintf("chain %s range [%d, %d]: no height of chunk [%d, %d] could be written",
			r.chainID, r.rg.From, r.rg.To, blocks[0].Block.Number, blocks[len(blocks)-1].Block.Number), err)
	}
	r.mu.Lock()
	for h, e := range bad {
		r.failed[h] = heightFailure{err: e, reason: ErrTypeStorage, specific: true}
	}
	r.mu.Unlock()
	return nil
}

// bisect writes blocks in halves until each failing write is one height;
// it returns how many heights it wrote and records the failing ones.
func (r *rangeRun) bisect(ctx context.Context, blocks []*chaindata.BlockData, bad map[uint64]error) int {
	if ctx.Err() != nil {
		return 0
	}
	if err := r.a.Store.WriteBlocks(ctx, r.chainID, blocks); err == nil {
		r.written(blocks)
		return len(blocks)
	} else if len(blocks) == 1 {
		bad[blocks[0].Block.Number] = err
		return 0
	}
	mid := len(blocks) / 2
	return r.bisect(ctx, blocks[:mid], bad) + r.bisect(ctx, blocks[mid:], bad)
}

// written counts a written chunk.
func (r *rangeRun) written(blocks []*chaindata.BlockData) {
	var txs, logs uint64
	for _, b := range blocks {
		txs += uint64(len(b.Transactions))
		logs += uint64(len(b.Logs))
	}
	n := float64(len(blocks))
	m := r.a.Metrics
	m.BlocksIndexed.WithLabelValues(r.chainID).Add(n)
	m.HeightsIndexed.WithLabelValues(r.chainID, types.IndexModeRange.Label()).Add(n)
	m.TxsIndexed.WithLabelValues(r.chainID).Add(float64(txs))
	m.LogsIndexed.WithLabelValues(r.chainID).Add(float64(logs))
	r.a.countTraces(blocks...)
	r.mu.Lock()
	r.progress.Indexed += uint64(len(blocks))
	r.progress.Txs += txs
	r.progress.Logs += logs
	r.mu.Unlock()
}

// heartbeatEvery records the progress (earlier attempts included) every
// period until stop is called, and once more then.
func (r *rangeRun) heartbeatEvery(ctx context.Context, period time.Duration) (stop func()) {
	beat := func() {
		r.mu.Lock()
		p := types.RangeProgress{
			Indexed: r.prior.Indexed + r.progress.Indexed,
			Txs:     r.prior.Txs + r.progress.Txs,
			Logs:    r.prior.Logs + r.progress.Logs,
		}
		r.mu.Unlock()
		activity.RecordHeartbeat(ctx, p)
	}
	halt := temporal.TickUntil(ctx, period, beat)
	return func() {
		halt()
		beat()
	}
}

// heightSpecific tells a failure that is the height's own (the node's
// answer for it is malformed, or it has no such block) from one that may
// be an outage.
func heightSpecific(err error) bool {
	var malformed *rpc.MalformedError
	return errors.As(err, &malformed) || errors.Is(err, rpc.ErrBlockNotFound)
}

// fetchReason is the error type a fetch failure is handed off with.
func fetchReason(err error) string {
	var malformed *rpc.MalformedError
	switch {
	case errors.As(err, &malformed):
		return ErrTypeMalformedResponse
	case errors.Is(err, rpc.ErrBlockNotFound):
		return ErrTypeBlockNotFound
	default:
		return ErrTypeRPC
	}
}
