// Package status answers "how far is each chain?" for `indexer status`:
// head (from the node), watermark (from ClickHouse), lag, and the running
// catch-up's progress (the scheduler's `progress` query, or its memo when
// it does not answer). Collect gathers it; Render and JSON print it.
package status

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// Report is the status of one chain. A part that could not be read says
// why in Errors and leaves its fields zero; the rest is still reported.
type Report struct {
	ChainID string `json:"chain_id"`
	// Head is the node's head; HeadKnown is false when no endpoint
	// answered, and then Head and the lag are 0 for want of a value, not
	// a reading.
	Head      uint64 `json:"head"`
	HeadKnown bool   `json:"head_known"`
	// Watermark is the last contiguous indexed height; Indexed is false
	// when nothing is indexed yet.
	Watermark uint64 `json:"watermark"`
	Indexed   bool   `json:"indexed"`
	// Lag is head − watermark in blocks, and in seconds of block time
	// (0 when the head is not known: see HeadKnown).
	Lag        uint64  `json:"lag_blocks"`
	LagSeconds float64 `json:"lag_seconds"`
	// Scheduler is set while a catch-up runs.
	Scheduler *Scheduler `json:"scheduler,omitempty"`
	// Traces is set for a chain that traces: its traces backfill.
	Traces *Traces `json:"traces_backfill,omitempty"`
	// Held is set while the height above the watermark keeps failing.
	Held   *Held    `json:"held,omitempty"`
	Errors []string `json:"errors,omitempty"`
}

// Scheduler is a running catch-up's progress.
type Scheduler struct {
	Owned chaindata.HeightRange `json:"owned"`
	// Total is every height it was given (less those dropped above the
	// head); Scheduled of them were started, Remaining are not yet.
	Total     uint64 `json:"total"`
	Scheduled uint64 `json:"scheduled"`
	Remaining uint64 `json:"remaining"`
	InFlight  uint64 `json:"in_flight"`
	Dropped   uint64 `json:"dropped,omitempty"`
	// Rate is heights started per second in the scheduler's current run;
	// ETASeconds is Remaining at that rate (0 when unknown).
	Rate       float64  `json:"rate"`
	ETASeconds float64  `json:"eta_seconds"`
	Buckets    []Bucket `json:"buckets"`
	// Paused: the chain is paused (indexer chain pause); the scheduler
	// starts nothing until resumed, so there is no ETA.
	Paused bool `json:"paused,omitempty"`
	// Answered is false when the progress query was not answered in time
	// (a busy scheduler): only Owned, from the memo, is known.
	Answered bool `json:"answered"`
}

// Bucket is one priority level of a catch-up.
type Bucket struct {
	Name  string `json:"name"`
	Total uint64 `json:"total"`
	Done  uint64 `json:"done"`
}

// Fraction is done over total (1 for an empty bucket).
func (b Bucket) Fraction() float64 { return fraction(b.Done, b.Total) }

// Fraction is scheduled over total (1 when there is nothing to do).
func (s *Scheduler) Fraction() float64 { return fraction(s.Scheduled, s.Total) }

func fraction(done, total uint64) float64 {
	if total == 0 {
		return 1
	}
	return min(1, float64(done)/float64(total))
}

// Sources is what Collect reads from.
type Sources struct {
	// Head reads the chain's head from its node.
	Head func(ctx context.Context, chainID string) (uint64, error)
	// Watermark reads the last contiguous indexed height from start.
	Watermark func(ctx context.Context, chainID string, start uint64) (uint64, bool, error)
	// Temporal asks the scheduler; nil reports it as unknown.
	Temporal client.Client
	// QueryTimeout bounds the progress query (default 5 s).
	QueryTimeout time.Duration
	// Traces reads a chain's traces backfill; nil, or a nil answer, for a
	// chain that does not trace.
	Traces func(ctx context.Context, chainID string) (*Traces, error)
}

// Want is one chain to report: its ID, start height and block time.
type Want struct {
	ChainID     string
	StartHeight uint64
	BlockTime   time.Duration
}

// Collect reads the status of each chain, in the order given.
func Collect(ctx context.Context, src Sources, chains []Want) []Report {
	out := make([]Report, 0, len(chains))
	for _, w := range chains {
		out = append(out, collectOne(ctx, src, w))
	}
	return out
}

func collectOne(ctx context.Context, src Sources, w Want) Report {
	c := Report{ChainID: w.ChainID}
	fail := func(what string, err error) { c.Errors = append(c.Errors, fmt.Sprintf("%s: %v", what, err)) }
	head, err := src.Head(ctx, w.ChainID)
	if err != nil {
		fail("head", err)
		head = 0
	}
	c.Head, c.HeadKnown = head, err == nil
	wm, found, err := src.Watermark(ctx, w.ChainID, w.StartHeight)
	if err != nil {
		fail("watermark", err)
	}
	c.Watermark, c.Indexed = wm, found
	next := w.StartHeight
	if found {
		next = wm + 1
	}
	if c.HeadKnown && head+1 > next {
		c.Lag = head + 1 - next
	}
	c.LagSeconds = float64(c.Lag) * w.BlockTime.Seconds()
	if src.Temporal != nil && head >= next {
		h, err := held(ctx, src.Temporal, w.ChainID, next)
		if err != nil {
			fail("held height", err)
		}
		c.Held = h
	}
	sched, err := scheduler(ctx, src, w.ChainID)
	if err != nil {
		fail("scheduler", err)
	}
	c.Scheduler = sched
	if src.Traces != nil {
		tr, err := src.Traces(ctx, w.ChainID)
		if err != nil {
			fail("traces backfill", err)
		}
		c.Traces = tr
	}
	return c
}

// scheduler reads the chain's running scheduler, nil when none runs.
func scheduler(ctx context.Context, src Sources, chainID string) (*Scheduler, error) {
	if src.Temporal == nil {
		return nil, errors.New("no Temporal client: the scheduler is not known")
	}
	id := temporal.SchedulerID(chainID)
	desc, err := describeRunning(ctx, src.Temporal, id)
	if desc == nil {
		return nil, err
	}
	info := desc.GetWorkflowExecutionInfo()
	s := &Scheduler{}
	if p := info.GetMemo().GetFields()[temporal.SchedulerOwnedMemo]; p != nil {
		_ = converter.GetDefaultDataConverter().FromPayload(p, &s.Owned)
	}
	timeout := src.QueryTimeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	qctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	v, err := src.Temporal.QueryWorkflow(qctx, id, "", temporal.SchedulerProgressQuery)
	if err != nil {
		return s, fmt.Errorf("progress query of %s (a busy scheduler answers late; try again): %w", id, err)
	}
	var p temporal.SchedulerProgress
	if err := v.Get(&p); err != nil {
		return s, fmt.Errorf("progress of %s: %w", id, err)
	}
	*s = FromProgress(p)
	return s, nil
}

// FromProgress turns a scheduler's progress answer into its status.
func FromProgress(p temporal.SchedulerProgress) Scheduler {
	s := Scheduler{
		Owned: p.Owned, Scheduled: p.Scheduled, Remaining: p.Remaining, Total: p.Scheduled + p.Remaining,
		InFlight: p.InFlight, Dropped: p.Dropped, Rate: p.Rate, Answered: true, Paused: p.Paused,
	}
	if p.Rate > 0 && !p.Paused {
		s.ETASeconds = float64(p.Remaining) / p.Rate
	}
	for _, b := range p.Buckets {
		s.Buckets = append(s.Buckets, Bucket{Name: b.Name, Total: b.Total, Done: b.Done})
	}
	return s
}

// describeRunning describes the workflow id's current run: nil, and no
// error, when there is none or it is not running.
func describeRunning(ctx context.Context, tc client.Client, id string) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
	desc, err := tc.DescribeWorkflowExecution(ctx, id, "")
	var notFound *serviceerror.NotFound
	switch {
	case errors.As(err, &notFound):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("describe %s: %w", id, err)
	}
	if desc.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return nil, nil
	}
	return desc, nil
}
