package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/stream"
)

// The stream's two transports over one loop (pump): server-sent events
// and websocket messages, one JSON stream.Event each.

// keepAlive is how often an idle stream sends something (an SSE comment,
// a websocket ping), so that proxies keep the connection and a dead
// consumer is noticed.
const keepAlive = 15 * time.Second

// streams counts the open streams and ends them all when the server
// shuts down (Shutdown does not wait for a stream to end by itself).
type streams struct {
	mu      sync.Mutex
	open    int
	closing context.Context
	close   context.CancelFunc
}

func newStreams() *streams {
	ctx, cancel := context.WithCancel(context.Background())
	return &streams{closing: ctx, close: cancel}
}

func (s *streams) acquire(limit int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open >= limit {
		return false
	}
	s.open++
	return true
}

func (s *streams) count() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return float64(s.open)
}

func (s *streams) release() {
	s.mu.Lock()
	s.open--
	s.mu.Unlock()
}

// errSlowConsumer ends a stream whose consumer did not take a page in
// time.
var errSlowConsumer = errors.New("the consumer did not take the events within api.stream_write_timeout")

// pump reads the events after start.after, a page at a time, and hands
// each page to send; while there are none it polls every
// api.stream_poll, calling idle every keepAlive. It returns when ctx
// ends or send or idle fails; last is the last seq sent.
func (s *Server) pump(ctx context.Context, start streamStart, send func([]stream.Event) error, idle func() error) (last uint64, err error) {
	last = start.after
	poll := time.NewTicker(s.cfg.StreamPoll)
	defer poll.Stop()
	quiet := time.Now()
	// A poll for new events, not a retry: a failed read ends the stream,
	// and the client reconnects from its last id.
	for {
		evs, err := stream.ReadEvents(ctx, s.store.Stream, start.chainID, last, streamPage, start.include)
		if err != nil {
			return last, err
		}
		if len(evs) > 0 {
			if err := send(evs); err != nil {
				return last, err
			}
			last = evs[len(evs)-1].Seq
			s.m.streamEvents.WithLabelValues(start.chainID).Add(float64(len(evs)))
			quiet = time.Now()
			continue
		}
		if time.Since(quiet) >= keepAlive {
			if err := idle(); err != nil {
				return last, err
			}
			quiet = time.Now()
		}
		select {
		case <-ctx.Done():
			return last, ctx.Err()
		case <-poll.C:
		}
	}
}

// serveSSE streams as text/event-stream: `id: <seq>`, `event: <type>`,
// `data: <the event's JSON>`. A client's reconnect sends the last id it
// got as Last-Event-ID and goes on from there.
func (s *Server) serveSSE(ctx context.Context, w http.ResponseWriter, r *http.Request, start streamStart) {
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // nginx: pass events on at once
	w.WriteHeader(http.StatusOK)
	write := func(b []byte) error {
		if err := rc.SetWriteDeadline(time.Now().Add(s.cfg.StreamWriteTimeout)); err != nil {
			return err
		}
		if _, err := w.Write(b); err != nil {
			return fmt.Errorf("%w: %v", errSlowConsumer, err)
		}
		return rc.Flush()
	}
	// How long an SSE client waits before it reconnects.
	if err := write([]byte("retry: 1000\n\n")); err != nil {
		return
	}
	var buf bytes.Buffer
	last, err := s.pump(ctx, start, func(evs []stream.Event) error {
		buf.Reset()
		for _, e := range evs {
			b, err := json.Marshal(e)
			if err != nil {
				return err
			}
			fmt.Fprintf(&buf, "id: %d\nevent: %s\ndata: %s\n\n", e.Seq, e.Type, b)
		}
		return write(buf.Bytes())
	}, func() error { return write([]byte(": keep-alive\n\n")) })
	s.streamEnded(r, start, last, err)
	if s.streams.closing.Err() != nil {
		// Shutting down: say where to resume, should the client not
		// keep the last id itself.
		_ = write(fmt.Appendf(nil, "event: resume\ndata: {\"from\":%d}\n\n", last+1))
	}
}

// isWebsocket tells a websocket upgrade request.
func isWebsocket(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
}

// serveWebsocket streams one text message per event. The consumer sends
// nothing; a close from it ends the stream. The close frame the server
// sends says where to resume ("resume from <seq>").
func (s *Server) serveWebsocket(ctx context.Context, w http.ResponseWriter, r *http.Request, start streamStart) {
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		s.log.Debug("websocket upgrade failed", zap.Error(err))
		return
	}
	defer c.CloseNow()
	ctx = c.CloseRead(ctx)
	write := func(f func(ctx context.Context) error) error {
		wctx, cancel := context.WithTimeout(ctx, s.cfg.StreamWriteTimeout)
		defer cancel()
		if err := f(wctx); err != nil {
			if wctx.Err() != nil && ctx.Err() == nil {
				return fmt.Errorf("%w: %v", errSlowConsumer, err)
			}
			return err
		}
		return nil
	}
	last, err := s.pump(ctx, start, func(evs []stream.Event) error {
		for _, e := range evs {
			b, err := json.Marshal(e)
			if err != nil {
				return err
			}
			if err := write(func(wctx context.Context) error { return c.Write(wctx, websocket.MessageText, b) }); err != nil {
				return err
			}
		}
		return nil
	}, func() error { return write(c.Ping) })
	s.streamEnded(r, start, last, err)
	reason := fmt.Sprintf("resume from %d", last+1)
	switch {
	case errors.Is(err, errSlowConsumer):
		_ = c.Close(websocket.StatusTryAgainLater, "slow consumer; "+reason)
	case s.streams.closing.Err() != nil:
		_ = c.Close(websocket.StatusGoingAway, "server shutting down; "+reason)
	default:
		_ = c.Close(websocket.StatusInternalError, reason)
	}
}

// streamEnded logs and counts why a stream ended.
func (s *Server) streamEnded(r *http.Request, start streamStart, last uint64, err error) {
	reason := "closed"
	switch {
	case errors.Is(err, errSlowConsumer):
		reason = "slow_consumer"
	case s.streams.closing.Err() != nil:
		reason = "shutdown"
	case r.Context().Err() != nil || errors.Is(err, context.Canceled):
		reason = "closed"
	case err != nil:
		reason = "error"
		s.log.Warn("a stream ended on an error", zap.String("chain_id", start.chainID), zap.Uint64("last_seq", last),
			zap.String("error", s.redact(err.Error())))
	}
	s.m.streamsEnded.WithLabelValues(start.chainID, reason).Inc()
}
