package workflow_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// shrinkFixture runs schedulers whose range reaches 10,000,000 heights
// above the real head (5,000), as one handed a phantom head would.
const (
	realHead    = 5_000
	phantomHead = realHead + 10_000_000
)

// headAnswers mocks HeadHeight with the real head, or with err while it is
// set, and counts the calls. Its hook also cancels a run still going after
// an hour of workflow time, so that a scheduler stuck on phantom heights
// fails the test instead of hanging it.
type headAnswers struct {
	mu    sync.Mutex // local activities run on their own goroutine
	err   error
	calls int
}

func (h *headAnswers) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.calls
}

func (h *headAnswers) hook(t testing.TB, queried *temporal.SchedulerProgress) func(*testsuite.TestWorkflowEnvironment, int) {
	return func(env *testsuite.TestWorkflowEnvironment, _ int) {
		env.OnActivity(acts.HeadHeight, mock.Anything, mock.Anything).Return(
			func(context.Context, string) (uint64, error) {
				h.mu.Lock()
				defer h.mu.Unlock()
				h.calls++
				return realHead, h.err
			})
		env.RegisterDelayedCallback(env.CancelWorkflow, time.Hour)
		if queried != nil {
			env.RegisterDelayedCallback(func() {
				v, err := env.QueryWorkflow(temporal.SchedulerProgressQuery)
				require.NoError(t, err)
				require.NoError(t, v.Get(queried))
			}, time.Second)
		}
	}
}

func shrinkRecorder() *recorder {
	r := newRecorder(phantomHead + 1)
	r.descending, r.ageCheck, r.ageHead = true, true, realHead
	return r
}

// A scheduler given [1, phantom] asks for the head before its first start,
// drops the 10,000,000 heights above it, and schedules 1..5,000 at the
// levels their age from the real head gives (the recorder checks each).
func TestSchedulerDropsHeightsAboveTheHead(t *testing.T) {
	wfs := newWorkflows(chainConfig(nil))
	r := shrinkRecorder()
	var heads headAnswers
	var mid temporal.SchedulerProgress
	out := runScheduler(t, wfs, schedIn(phantomHead, chaindata.HeightRange{From: 1, To: phantomHead}), t0, r,
		schedOpts{hook: heads.hook(t, &mid), maxRuns: 1, headByHook: true})
	require.NoError(t, r.err)
	require.Equal(t, uint64(realHead), r.total)
	require.Equal(t, uint64(realHead), out.Result.Scheduled)
	require.LessOrEqual(t, r.snapshot()[0].Top, uint64(realHead))
	require.Equal(t, 1, heads.count(), "asked once: nothing it holds is above the head afterwards")

	require.Equal(t, uint64(10_000_000), mid.Dropped)
	require.Equal(t, chaindata.HeightRange{From: 1, To: realHead}, mid.Owned, "HeadScan takes the heights above")
	require.Equal(t, uint64(realHead), mid.Head)
	var total, done uint64
	for _, b := range out.Result.Buckets {
		total, done = total+b.Total, done+b.Done
	}
	require.Equal(t, [2]uint64{realHead, realHead}, [2]uint64{total, done})
}

// A run that carried a window full of phantom heights (2,000 started, none
// of which will ever be indexed) would wait for them for ever: the head
// check drops them from the window and the real heights are scheduled.
func TestSchedulerFreesAWindowOfPhantomHeights(t *testing.T) {
	wfs := newWorkflows(chainConfig(nil))
	r := shrinkRecorder()
	var heads headAnswers
	in := schedIn(phantomHead, chaindata.HeightRange{From: 1, To: realHead})
	in.State = types.SchedulerState{
		Runs: 1, Scheduled: 2000, Owned: chaindata.HeightRange{From: 1, To: phantomHead},
		Buckets:  []temporal.BucketProgress{{Level: int(types.High), Name: types.High.String(), Total: 7000, Done: 2000}},
		Pending:  []chaindata.HeightRange{{From: phantomHead - 1999, To: phantomHead}},
		InFlight: 2000,
	}
	count := func(now time.Time, in types.CountIndexedInput) ([]uint64, error) {
		out := make([]uint64, len(in.Ranges))
		for i, rg := range in.Ranges {
			if rg.To <= realHead {
				out[i] = rg.Len()
			}
		}
		return out, nil
	}
	var mid temporal.SchedulerProgress
	out := runScheduler(t, wfs, in, t0, r, schedOpts{count: count, hook: heads.hook(t, &mid), headByHook: true})
	require.NoError(t, r.err)
	require.Equal(t, uint64(realHead), r.total)
	require.Equal(t, uint64(2000+realHead), out.Result.Scheduled)
	require.Equal(t, uint64(2000), mid.Dropped)
	require.Less(t, out.End.Sub(t0), 5*time.Minute, "finished at the rate limit, not after waiting for phantom heights")
}

// A node that cannot answer changes nothing: the scheduler goes on with
// its range as given and asks again later.
func TestSchedulerWithoutAHeadKeepsItsRange(t *testing.T) {
	wfs := newWorkflows(chainConfig(nil))
	r := newRecorder(2_000)
	heads := headAnswers{err: errors.New("node down")}
	out := runScheduler(t, wfs, schedIn(1_000, chaindata.HeightRange{From: 1, To: 1_500}), t0, r, schedOpts{hook: heads.hook(t, nil), headByHook: true})
	require.NoError(t, r.err)
	require.Equal(t, uint64(1_500), out.Result.Scheduled)
	require.Greater(t, heads.count(), 1, "asked again after headRetry")
}
