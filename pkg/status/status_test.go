package status_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/muesli/termenv"
	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/status"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

func sample() []status.Report {
	s := status.FromProgress(temporal.SchedulerProgress{
		Owned: chaindata.HeightRange{From: 1, To: 10_000}, Scheduled: 4_000, Remaining: 6_000, InFlight: 800, Rate: 100,
		Elapsed: time.Minute,
		Buckets: []temporal.BucketProgress{
			{Level: int(types.High), Name: "high", Total: 4_320, Done: 4_000},
			{Level: int(types.Medium), Name: "medium", Total: 5_680},
		},
	})
	return []status.Report{
		{ChainID: "mainnet", Head: 10_000, HeadKnown: true, Watermark: 1_200, Indexed: true, Lag: 8_800, LagSeconds: 8_800 * 12, Scheduler: &s},
		{ChainID: "sepolia", Head: 500, HeadKnown: true, Watermark: 500, Indexed: true, Errors: []string{"scheduler: describe: unavailable"}},
		{ChainID: "holesky", Watermark: 70, Indexed: true, Errors: []string{"head: no endpoint answered"}},
	}
}

func TestFromProgress(t *testing.T) {
	s := *sample()[0].Scheduler
	require.Equal(t, uint64(10_000), s.Total)
	require.InDelta(t, 0.4, s.Fraction(), 1e-9)
	require.InDelta(t, 60.0, s.ETASeconds, 1e-9, "6,000 heights at 100/s")
	require.True(t, s.Answered)
	require.InDelta(t, 4000.0/4320, s.Buckets[0].Fraction(), 1e-9)
	require.Zero(t, s.Buckets[1].Fraction())
	require.Equal(t, 1.0, status.Bucket{}.Fraction(), "an empty bucket is done")
}

func TestRender(t *testing.T) {
	var b bytes.Buffer
	status.Render(&b, sample(), termenv.Ascii)
	out := b.String()
	require.NotContains(t, out, "\x1b[", "no colour codes with the Ascii profile")
	lines := strings.Split(out, "\n")
	row := func(prefix string) string {
		for _, l := range lines {
			if strings.Contains(l, prefix) {
				return l
			}
		}
		t.Fatalf("no row %q in\n%s", prefix, out)
		return ""
	}
	main := row("mainnet")
	require.Contains(t, main, "40%")
	require.Contains(t, main, "4000 / 10000")
	require.Contains(t, main, "8800 blocks (29h20m)")
	require.Contains(t, main, "100.0/s")
	require.Contains(t, main, "1m00s")
	// The bar is 24 cells with the percentage: filled ≈ 40 % of the rest.
	require.Equal(t, 8, strings.Count(main, "█"))
	require.Contains(t, row("high"), "93%")
	require.Contains(t, row("medium"), "  0%")
	require.Contains(t, row("sepolia"), "not running")
	require.Contains(t, row("error"), "scheduler: describe: unavailable")
	require.Regexp(t, `holesky\s*│\s*unknown\s*│\s*70\s*│\s*unknown\s*│`, row("holesky"), "a head no endpoint gave is unknown, and so is the lag: not 0")
}

func TestJSON(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, status.JSON(&b, sample()))
	var back []map[string]any
	require.NoError(t, json.Unmarshal(b.Bytes(), &back))
	require.Len(t, back, 3)
	require.Equal(t, "mainnet", back[0]["chain_id"])
	require.Equal(t, 8800.0, back[0]["lag_blocks"])
	sched := back[0]["scheduler"].(map[string]any)
	require.Equal(t, 10000.0, sched["total"])
	require.Equal(t, 60.0, sched["eta_seconds"])
	require.Len(t, sched["buckets"], 2)
	require.NotContains(t, back[1], "scheduler")
	require.Equal(t, true, back[0]["head_known"])
	require.Equal(t, false, back[2]["head_known"], "head 0 is no reading")
}

// A paused scheduler has no ETA, and the table says it is paused.
func TestPausedSchedulerHasNoETA(t *testing.T) {
	s := status.FromProgress(temporal.SchedulerProgress{Scheduled: 10, Remaining: 90, Rate: 5, Paused: true})
	require.True(t, s.Paused)
	require.Zero(t, s.ETASeconds)
	var b strings.Builder
	status.Render(&b, []status.Report{{ChainID: "c", Head: 100, Scheduler: &s}}, termenv.Ascii)
	require.Contains(t, b.String(), "paused")
}

// A head no endpoint gave is no reading: the lag is not computed from 0
// (a head of 0 made a chain 70 heights in look caught up).
func TestCollectWithoutAHead(t *testing.T) {
	ctx := context.Background()
	headErr := errors.New("no endpoint answered")
	var head uint64 = 100
	src := status.Sources{
		Head: func(context.Context, string) (uint64, error) { return head, headErr },
		Watermark: func(context.Context, string, uint64) (uint64, bool, error) {
			return 70, true, nil
		},
	}
	want := []status.Want{{ChainID: "c", BlockTime: 2 * time.Second}}
	c := status.Collect(ctx, src, want)[0]
	require.False(t, c.HeadKnown)
	require.Zero(t, c.Head, "not the failed call's value")
	require.Zero(t, c.Lag)
	require.Zero(t, c.LagSeconds)
	require.Contains(t, c.Errors, "head: no endpoint answered")

	headErr = nil
	c = status.Collect(ctx, src, want)[0]
	require.True(t, c.HeadKnown)
	require.Equal(t, uint64(100), c.Head)
	require.Equal(t, uint64(30), c.Lag)
	require.Equal(t, 60.0, c.LagSeconds)
	require.NotContains(t, c.Errors, "head: no endpoint answered")
}
