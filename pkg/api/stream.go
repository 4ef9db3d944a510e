package api

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/tideline-dev/tideline/pkg/stream"
)

// GET /v1/chains/{id}/stream: the chain's change stream (pkg/stream), as
// server-sent events or, on a websocket upgrade, as websocket messages
// (stream_transport.go). Where it starts:
//
//   - Last-Event-ID (an SSE client resuming): after that seq;
//   - from=N: at seq N (1 is the stream's first event);
//   - from_height=H: at the first event of a height at or above H;
//   - none of them: after the last event stored (new events only).
//
// Events are read from storage a page at a time, and the next page only
// after the last one is written out: a slow consumer holds one page, never
// more; one that does not take a page within api.stream_write_timeout is
// disconnected, and resumes from the last seq it got (every event names
// its seq: the SSE id, the websocket message's seq).

// streamPage is how many events one read takes.
const streamPage = 100

// streamStart is where a stream request starts: after seq.
type streamStart struct {
	chainID string
	after   uint64
	include stream.Include
}

// stream answers GET /v1/chains/{id}/stream.
func (s *Server) stream(w http.ResponseWriter, r *http.Request) {
	start, e := s.streamRequest(r)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	if !s.streams.acquire(s.cfg.StreamMaxConnections) {
		s.writeError(w, r, unavailable("this API serves %d streams already (api.stream_max_connections); retry later",
			s.cfg.StreamMaxConnections))
		return
	}
	defer s.streams.release()
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(s.streams.closing, cancel)
	defer stop()
	if isWebsocket(r) {
		s.serveWebsocket(ctx, w, r, start)
		return
	}
	s.serveSSE(ctx, w, r, start)
}

// streamRequest checks the request and finds where it starts.
func (s *Server) streamRequest(r *http.Request) (streamStart, *apiError) {
	// apikey was read by the key check (admit.go).
	q, e := s.request(r, pathNone, "from", "from_height", "include", "apikey")
	if e != nil {
		return streamStart{}, e
	}
	inc, err := stream.ParseInclude(q.p.get("include"))
	if err != nil {
		return streamStart{}, badParam("include", "%s", strings.TrimPrefix(err.Error(), "include: "))
	}
	start := streamStart{chainID: q.id, include: inc}
	if q.p.has("from") && q.p.has("from_height") {
		return start, badParam("from", "give from (a sequence number) or from_height, not both")
	}
	ctx := r.Context()
	tail, err := s.store.Stream.StreamTail(ctx, q.id, 1)
	if err != nil {
		return start, fromStore(err)
	}
	var last uint64
	if len(tail) == 1 {
		last = tail[0].Seq
	}
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		seq, err := strconv.ParseUint(id, 10, 64)
		if err != nil {
			return start, badParam("Last-Event-ID", "%q is not a sequence number", clip(id))
		}
		return startAt(start, seq+1, last, "Last-Event-ID")
	}
	switch {
	case q.p.has("from"):
		seq, err := strconv.ParseUint(q.p.get("from"), 10, 64)
		if err != nil || seq == 0 {
			return start, badParam("from", "%q is not a sequence number (1 or more)", clip(q.p.get("from")))
		}
		return startAt(start, seq, last, "from")
	case q.p.has("from_height"):
		h, _, e := q.p.optHeight("from_height")
		if e != nil {
			return start, e
		}
		seq, found, err := s.store.Stream.StreamSeqOfHeight(ctx, q.id, h)
		if err != nil {
			return start, fromStore(err)
		}
		start.after = last // the height is not streamed yet: from the next event
		if found {
			start.after = seq - 1
		}
		return start, nil
	}
	start.after = last
	return start, nil
}

// startAt starts at seq, which may be at most one past the last event
// stored (the next one).
func startAt(start streamStart, seq, last uint64, param string) (streamStart, *apiError) {
	if seq > last+1 {
		return start, badParam(param, "the stream's last event is %d: it cannot start at %d", last, seq)
	}
	start.after = seq - 1
	return start, nil
}
