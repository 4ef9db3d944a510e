package tokenmeta

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/internal/testkit"
	"github.com/tideline-dev/tideline/pkg/storage"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// The job's Schedule fires every Interval, and an attempt returns at its
// budget, before its activity's timeout.
func TestSchedule(t *testing.T) {
	o := temporal.NewOptions("eth", time.Minute)
	p := Schedule(o)
	require.Equal(t, "eth:token-metadata", p.ScheduleID)
	require.Equal(t, temporal.TokenMetadataWorkflow, p.Workflow)
	require.Equal(t, Interval, p.Every)
	require.Equal(t, []any{Input{ChainID: "eth"}}, p.Args)
	require.Less(t, Budget, activityOptions(o).StartToCloseTimeout)
	require.Greater(t, p.Timeout, activityOptions(o).StartToCloseTimeout)
}

// The TokenMetadata workflow runs its one activity on the admin queue,
// with a heartbeat timeout, and returns its result.
func TestWorkflowRunsItsActivity(t *testing.T) {
	const chainID = "meta-wf"
	j := &Job{ChainID: chainID, Options: temporal.NewOptions(chainID, time.Minute)}
	want := Result{Height: 99, HasHeight: true, Watermark: 99, Tokens: 3, Answered: 2}
	got, info, err := testkit.RunOneActivityJob(t, j.Register, temporal.TokenMetadataWorkflow, ActivityName, Input{ChainID: chainID},
		func(context.Context, Input) (Result, error) { return want, nil })
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.Equal(t, temporal.AdminQueue(chainID), info.TaskQueue)
	require.Equal(t, time.Minute, info.HeartbeatTimeout)
}

// The delay of a token's metadata starts when its first transfer could
// first be shown: after it was written and, when the previous run saw the
// watermark below it, after that run looked.
func TestDelayBoundStartsWhenTheTransferCouldBeShown(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	tok := storage.SeenToken{Token: "0xa", FirstHeight: 100, FirstWritten: t0}
	stored := t0.Add(time.Hour)
	for _, c := range []struct {
		what string
		prev seenWatermark
		want time.Duration
	}{
		{"no run before (a new process)", seenWatermark{}, time.Hour},
		{"the run before saw the watermark below it, after the write (a catch-up)", seenWatermark{height: 99, at: t0.Add(50 * time.Minute), ok: true}, 10 * time.Minute},
		{"the run before saw it shown already", seenWatermark{height: 100, at: t0.Add(50 * time.Minute), ok: true}, time.Hour},
		{"the run before looked before the write", seenWatermark{height: 50, at: t0.Add(-time.Minute), ok: true}, time.Hour},
	} {
		require.Equal(t, c.want, delayBound(tok, c.prev, stored), c.what)
	}
	require.Zero(t, delayBound(tok, seenWatermark{}, t0.Add(-time.Second)), "another process's clock ahead: no negative delay")

	var l lastSeen
	require.Equal(t, seenWatermark{}, l.swap(10, t0))
	require.Equal(t, seenWatermark{height: 10, at: t0, ok: true}, l.swap(20, stored))
	require.Equal(t, seenWatermark{height: 20, at: stored, ok: true}, l.swap(20, stored))
}
