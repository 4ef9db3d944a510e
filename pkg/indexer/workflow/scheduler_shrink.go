package workflow

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// The Scheduler shrinks to the real chain.
//
// A scheduler's range comes from a head a scan read. Should that head have
// been wrong (a phantom head from a broken replica, taken before heads were
// confirmed, or a chain that has since been cut back), the scheduler would
// start heights that do not exist, fill its in-flight window with them and,
// owning the live heights, keep HeadScan from starting them. So whenever
// it holds heights above the highest head it has seen confirmed, it asks
// the node for the head (HeadHeight, which confirms a head by its block)
// and drops everything above: the heights it has not started, and the
// started ones from its window (their IndexBlock workflows end as "not
// produced"). Its range shrinks to the head (in its state and its memo,
// temporal.SchedulerOwnedMemo), its reference head becomes
// that head (so ages and levels are right again), and HeadScan takes the
// heights above. Dropped heights are not lost: they lie above the
// watermark, and the scans start them once the chain has them.

// shrinkChange versions the head check, so that histories recorded before
// it still replay.
const shrinkChange = "scheduler-shrink"

// headRetry is how long a scheduler waits before asking for the head again
// after the node could not answer.
const headRetry = 30 * time.Second

// top is the highest height the scheduler holds, started or not.
func (s *schedulerRun) top() (uint64, bool) {
	var top uint64
	ok := false
	for _, rs := range [][]chaindata.HeightRange{s.remaining, s.state.Pending} {
		if len(rs) > 0 {
			top, ok = max(top, chaindata.Span(rs).To), true
		}
	}
	return top, ok
}

// shrinkToHead drops the heights above the node's head, if the scheduler
// holds any above the highest head it has seen (see above), and tells
// whether it dropped any. A node that cannot answer costs nothing but a
// later try.
func (s *schedulerRun) shrinkToHead(ctx, lctx workflow.Context) bool {
	if !s.checkHead {
		return false
	}
	top, ok := s.top()
	if !ok || (s.headKnown && top <= s.knownHead) {
		return false
	}
	now := workflow.Now(ctx)
	if now.Before(s.nextHeadAsk) {
		return false
	}
	log := workflow.GetLogger(ctx)
	var head uint64
	if err := workflow.ExecuteLocalActivity(lctx, a.HeadHeight, s.chainID).Get(lctx, &head); err != nil {
		// Not retried now: the check is optional, and the scheduler's next
		// call after headRetry asks again (no loop of its own).
		s.nextHeadAsk = now.Add(headRetry)
		log.Warn("scheduler could not check its range against the node's head; asks again later",
			"chain_id", s.chainID, "error", err)
		return false
	}
	if !s.headKnown || head > s.knownHead {
		s.knownHead, s.headKnown = head, true
	}
	if top <= head {
		return false
	}
	above := chaindata.HeightRange{From: head + 1, To: top}
	unstarted := chaindata.Overlap(s.remaining, above)
	started := chaindata.Overlap(s.state.Pending, above)
	s.remaining = chaindata.Subtract(s.remaining, above)
	s.state.Pending = chaindata.Subtract(s.state.Pending, above)
	s.state.InFlight -= min(s.state.InFlight, started)
	s.state.Dropped += unstarted + started
	if s.state.Owned.To > head {
		s.state.Owned.To = max(head, s.state.Owned.From)
	}
	s.rebase(head)
	// HeadScan reads the owned span from the memo (CheckScheduler).
	if err := workflow.UpsertMemo(ctx, map[string]any{temporal.SchedulerOwnedMemo: s.state.Owned}); err != nil {
		log.Warn("scheduler could not update its memo", "chain_id", s.chainID, "error", err)
	}
	log.Warn("scheduler range reached above the node's head: dropped the heights above; the scans start them once they exist",
		"chain_id", s.chainID, "head", head, "dropped_from", above.From, "dropped_to", above.To,
		"dropped_unstarted", unstarted, "dropped_started", started)
	return true
}

// rebase makes head the reference head: the levels are measured from it
// again and the buckets recounted, each keeping what it has done.
func (s *schedulerRun) rebase(head uint64) {
	done := map[types.PriorityLevel]uint64{}
	for _, b := range s.state.Buckets {
		done[types.PriorityLevel(b.Level)] = b.Done
	}
	s.head = head
	s.spans = types.LevelSpans(s.head, s.state.Owned.From, s.ch.Settings.BlockTime)
	s.state.Buckets = s.state.Buckets[:0]
	for _, sp := range s.spans {
		d := done[sp.Level]
		s.state.Buckets = append(s.state.Buckets, temporal.BucketProgress{
			Level: int(sp.Level), Name: sp.Level.String(), Done: d, Total: d + chaindata.Overlap(s.remaining, sp.Range),
		})
	}
}
