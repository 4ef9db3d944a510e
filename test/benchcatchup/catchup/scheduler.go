package catchup

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.temporal.io/api/enums/v1"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// schedulerView follows the catch-up scheduler through its `progress`
// query and the database: a line when it starts, when each bucket's heights
// are all started and when they are all indexed, and when it ends.
type schedulerView struct {
	mu             sync.Mutex // the status line reads progress
	seen, finished bool
	began          time.Time
	lastBucket     time.Time
	progress       temporal.SchedulerProgress
	spans          []types.LevelSpan
	started        map[types.PriorityLevel]bool
	indexed        map[types.PriorityLevel]bool
}

// watchScheduler follows the scheduler every 2 s until ctx ends, apart
// from the per-second sampling: a query waits for a workflow task, which a
// busy worker may take seconds to pick up.
func (b *bench) watchScheduler(ctx context.Context, v *schedulerView) {
	every(ctx, 2*time.Second, func() { b.followScheduler(ctx, v) })
}

// status is a short summary for the status line.
func (v *schedulerView) status() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.seen || v.finished {
		return ""
	}
	return fmt.Sprintf("; scheduler: %d left to start, %d in flight", v.progress.Remaining, v.progress.InFlight)
}

func (b *bench) followScheduler(ctx context.Context, v *schedulerView) {
	v.mu.Lock()
	defer v.mu.Unlock()
	qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	desc, err := b.tc.DescribeWorkflowExecution(qctx, temporal.SchedulerID(chainID), "")
	if err != nil {
		return // not started yet (or the frontend is busy: next tick)
	}
	info := desc.GetWorkflowExecutionInfo()
	if v.began.IsZero() {
		// The first run's start (later runs continue as new under the
		// same ID); the query may answer only later on a busy worker.
		v.began = info.GetStartTime().AsTime()
		b.say("scheduler started %.1fs after the worker", v.began.Sub(b.workerStart).Seconds())
	}
	running := info.GetStatus() == enums.WORKFLOW_EXECUTION_STATUS_RUNNING
	if running {
		if q, err := b.tc.QueryWorkflow(qctx, temporal.SchedulerID(chainID), "", temporal.SchedulerProgressQuery); err == nil {
			var p temporal.SchedulerProgress
			if q.Get(&p) == nil {
				if !v.seen {
					v.seen = true
					v.started, v.indexed = map[types.PriorityLevel]bool{}, map[types.PriorityLevel]bool{}
					for _, sp := range types.LevelSpans(p.Head, p.Owned.From, b.opts.BlockTime) {
						if r, ok := intersect(sp.Range, p.Owned); ok {
							v.spans = append(v.spans, types.LevelSpan{Level: sp.Level, Range: r})
						}
					}
					var parts []string
					for _, bk := range p.Buckets {
						parts = append(parts, fmt.Sprintf("%s=%d", bk.Name, bk.Total))
					}
					b.say("scheduler progress: owns [%d, %d], head %d when it began; buckets %s", p.Owned.From, p.Owned.To, p.Head, strings.Join(parts, " "))
				}
				v.progress = p
				for _, bk := range p.Buckets {
					if bk.Total > 0 && bk.Done >= bk.Total && !v.started[types.PriorityLevel(bk.Level)] {
						v.started[types.PriorityLevel(bk.Level)] = true
						b.say("bucket %s: all %d heights started (scheduler run %d)", bk.Name, bk.Total, p.Runs)
					}
				}
			}
		}
	} else if !v.finished {
		v.finished = true
		b.say("scheduler finished (%s), %.1fs after it started", strings.ToLower(info.GetStatus().String()),
			info.GetCloseTime().AsTime().Sub(v.began).Seconds())
	}
	if !v.seen {
		return
	}
	// A bucket is done when its heights are indexed, which the database
	// says (the scheduler's counts are of heights started).
	for _, sp := range v.spans {
		if v.indexed[sp.Level] {
			continue
		}
		n, err := b.store.CountIndexed(qctx, chainID, []chaindata.HeightRange{sp.Range})
		if err != nil || n[0] < sp.Range.Len() {
			continue
		}
		v.indexed[sp.Level] = true
		// Buckets go newest first: this one's time runs from the previous
		// one's end (or the scheduler's start).
		from := v.began
		if !v.lastBucket.IsZero() {
			from = v.lastBucket
		}
		v.lastBucket = time.Now()
		secs := v.lastBucket.Sub(from).Seconds()
		b.say("bucket %s: all %d heights [%d, %d] indexed, %.1fs after the scheduler started (%.1f heights/s over %.1fs)",
			sp.Level, sp.Range.Len(), sp.Range.From, sp.Range.To, v.lastBucket.Sub(v.began).Seconds(), float64(sp.Range.Len())/secs, secs)
	}
}

func intersect(a, b chaindata.HeightRange) (chaindata.HeightRange, bool) {
	r := chaindata.HeightRange{From: max(a.From, b.From), To: min(a.To, b.To)}
	return r, r.From <= r.To
}
