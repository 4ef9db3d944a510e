package streamappend

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/tideline-dev/tideline/pkg/storage"
	"github.com/tideline-dev/tideline/pkg/stream"
)

// AppendStream appends the chain's change-stream events (pkg/stream) for
// RunFor, looking every stream.interval, heartbeating after each look.
// The appender reads where the stream is from its log when it starts, so
// a retry or the next run goes on exactly from there.
func (j *Job) AppendStream(ctx context.Context, in Input) (Result, error) {
	id, c := j.ChainID, j.Settings
	cfg := c.Stream
	app := &stream.Appender{
		Store: j.Store, ChainID: id, Start: c.StartHeight,
		Window: uint64(max(c.ConfirmationDepth, 1)), MaxBatch: cfg.MaxBatch,
		CheckParents: c.ConfirmationDepth > 0,
	}
	var res Result
	deadline := time.Now().Add(RunFor)
	tick := time.NewTicker(max(cfg.Interval, 10*time.Millisecond))
	defer tick.Stop()
	// Looks for new blocks until RunFor, not a retry: an error ends the
	// attempt, and the job's Temporal policy retries it.
	for {
		n, err := app.Step(ctx)
		if err != nil {
			return res, fmt.Errorf("chain %s: change stream: %w", id, err)
		}
		res.Appended += uint64(n)
		res.Seq, res.Next = app.Tip()
		if n > 0 {
			j.note(app)
		}
		activity.RecordHeartbeat(ctx, res)
		if !time.Now().Before(deadline) {
			return res, nil
		}
		if n >= cfg.MaxBatch && ctx.Err() == nil {
			continue // a catch-up: more is waiting
		}
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-tick.C:
		}
	}
}

// note sets the stream's series from what the appender appended.
func (j *Job) note(app *stream.Appender) {
	m := j.Metrics
	if m == nil {
		return
	}
	seq, next := app.Tip()
	m.Seq.WithLabelValues(j.ChainID).Set(float64(seq))
	if next > j.Settings.StartHeight {
		m.Height.WithLabelValues(j.ChainID).Set(float64(next - 1))
	}
	added, removed := app.LastStep()
	m.Events.WithLabelValues(j.ChainID, storage.StreamAdded).Add(float64(added))
	m.Events.WithLabelValues(j.ChainID, storage.StreamRemoved).Add(float64(removed))
}
