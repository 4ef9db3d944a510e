package activity

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/tideline-dev/tideline/pkg/indexer/types"
	"github.com/tideline-dev/tideline/pkg/storage"
	"github.com/tideline-dev/tideline/pkg/stream"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// AppendStream appends the chain's change-stream events (pkg/stream) for
// temporal.StreamRunFor, looking every stream.interval, heartbeating
// after each look. The appender reads where the stream is from its log
// when it starts, so a retry or the next run goes on exactly from there.
func (a *Activities) AppendStream(ctx context.Context, in types.StreamInput) (types.StreamResult, error) {
	id := a.Chain.ID
	cfg := a.Chain.Stream
	app := &stream.Appender{
		Store: a.Store, ChainID: id, Start: a.Chain.StartHeight,
		Window: uint64(max(a.Chain.ConfirmationDepth, 1)), MaxBatch: cfg.MaxBatch,
		CheckParents: a.Chain.ConfirmationDepth > 0,
	}
	var res types.StreamResult
	deadline := time.Now().Add(temporal.StreamRunFor)
	tick := time.NewTicker(max(cfg.Interval, 10*time.Millisecond))
	defer tick.Stop()
	for {
		n, err := app.Step(ctx)
		if err != nil {
			return res, fmt.Errorf("chain %s: change stream: %w", id, err)
		}
		res.Appended += uint64(n)
		res.Seq, res.Next = app.Tip()
		if n > 0 {
			a.noteStream(app)
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

// noteStream sets the stream's series from what the appender appended.
func (a *Activities) noteStream(app *stream.Appender) {
	if a.Metrics == nil {
		return
	}
	seq, next := app.Tip()
	m := a.Metrics.Stream
	m.StreamSeq.WithLabelValues(a.Chain.ID).Set(float64(seq))
	if next > a.Chain.StartHeight {
		m.StreamHeight.WithLabelValues(a.Chain.ID).Set(float64(next - 1))
	}
	added, removed := app.LastStep()
	m.StreamEvents.WithLabelValues(a.Chain.ID, storage.StreamAdded).Add(float64(added))
	m.StreamEvents.WithLabelValues(a.Chain.ID, storage.StreamRemoved).Add(float64(removed))
}
