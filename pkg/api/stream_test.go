package api

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/stream"
)

// The change stream over HTTP: events appended by the production
// appender (pkg/stream) from blocks written through the production write
// path, read back as SSE and websocket messages.

// sseEvent is one server-sent event.
type sseEvent struct {
	id, event string
	data      []byte
}

// sseReader reads server-sent events from an open answer.
type sseReader struct {
	body io.ReadCloser
	r    *bufio.Reader
}

func openSSE(t *testing.T, a *testAPI, path string, header map[string]string) *sseReader {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, a.srv.URL+path, nil)
	require.NoError(t, err)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := a.srv.Client().Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	t.Cleanup(func() { resp.Body.Close() })
	return &sseReader{body: resp.Body, r: bufio.NewReader(resp.Body)}
}

// next returns the next event, skipping comments and the retry field.
func (s *sseReader) next(t *testing.T) sseEvent {
	t.Helper()
	var e sseEvent
	for {
		line, err := s.r.ReadString('\n')
		require.NoError(t, err)
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "" && (e.event != "" || e.data != nil):
			return e
		case strings.HasPrefix(line, "id: "):
			e.id = line[4:]
		case strings.HasPrefix(line, "event: "):
			e.event = line[7:]
		case strings.HasPrefix(line, "data: "):
			e.data = []byte(line[6:])
		}
	}
}

// nextEvents reads n stream events, checking each against the document.
func (s *sseReader) nextEvents(t *testing.T, a *testAPI, n int) []stream.Event {
	t.Helper()
	var out []stream.Event
	for range n {
		raw := s.next(t)
		require.NoError(t, a.contract.CheckSchema("StreamEvent", raw.data))
		var e stream.Event
		require.NoError(t, json.Unmarshal(raw.data, &e))
		require.Equal(t, fmt.Sprint(e.Seq), raw.id)
		require.Equal(t, e.Type, raw.event)
		out = append(out, e)
	}
	return out
}

// forkOf is blocks [from, to] of a branch 'f' of the sample chain, whose
// block at from sits on the sample's block below.
func forkOf(from, to uint64) []*chaindata.BlockData {
	var out []*chaindata.BlockData
	for _, d := range sampleChain(to + 1)[from:] {
		h := d.Block.Number
		d.Block.Hash = h32('f', h)
		if h > from {
			d.Block.ParentHash = h32('f', h-1)
		}
		for i := range d.Transactions {
			d.Transactions[i].BlockHash = d.Block.Hash
		}
		for i := range d.Logs {
			d.Logs[i].BlockHash = d.Block.Hash
		}
		out = append(out, d)
	}
	return out
}

func appendStream(t *testing.T, a *testAPI) int {
	t.Helper()
	app := &stream.Appender{Store: a.store.Stream(), ChainID: testChain, Window: 8, MaxBatch: 1000, CheckParents: true}
	n, err := app.Step(context.Background())
	require.NoError(t, err)
	return n
}

func summarize(evs []stream.Event) []string {
	var out []string
	for _, e := range evs {
		sign := "+"
		if e.Type == stream.EventBlockRemoved {
			sign = "-"
		}
		out = append(out, fmt.Sprintf("%d%s%d:%c", e.Seq, sign, e.Block.Number, e.Block.Hash[2]))
	}
	return out
}

func TestStreamServesEventsInOrderThroughAReorg(t *testing.T) {
	a := newTestAPI(t, config.API{StreamPoll: 20 * time.Millisecond})
	a.write(t, sampleChain(6))
	require.Equal(t, 6, appendStream(t, a))

	s := openSSE(t, a, "/v1/chains/"+testChain+"/stream?from=1&include=transactions,logs", nil)
	first := s.nextEvents(t, a, 6)
	require.Equal(t, []string{"1+0:b", "2+1:b", "3+2:b", "4+3:b", "5+4:b", "6+5:b"}, summarize(first))
	sample := sampleChain(6)
	for i, e := range first {
		require.Equal(t, testChain, e.ChainID)
		require.Equal(t, sample[i].Block.ParentHash, e.Block.ParentHash)
		require.Equal(t, sample[i].Block.Timestamp, e.Block.Timestamp)
		require.False(t, e.Orphaned)
		require.Len(t, *e.Transactions, len(sample[i].Transactions))
		require.Equal(t, sample[i].Transactions[0].Hash, (*e.Transactions)[0].Hash)
		require.Len(t, *e.Logs, 1)
		require.Nil(t, e.TokenTransfers, "not asked for")
	}

	// A reorganisation of heights 4-5, and a new height 6, on the open
	// stream: the removals newest first, then the replacements.
	a.write(t, forkOf(4, 6))
	require.Equal(t, 5, appendStream(t, a))
	next := s.nextEvents(t, a, 5)
	require.Equal(t, []string{"7-5:b", "8-4:b", "9+4:f", "10+5:f", "11+6:f"}, summarize(next))
	require.Nil(t, next[0].Transactions, "a removal carries no rows")
	require.Equal(t, h32('f', 4), (*next[2].Transactions)[0].BlockHash)

	// Resuming: after the Last-Event-ID, at from, at from_height.
	resumed := openSSE(t, a, "/v1/chains/"+testChain+"/stream?from=1&include=transactions", map[string]string{"Last-Event-ID": "8"})
	require.Equal(t, []string{"9+4:f", "10+5:f", "11+6:f"}, summarize(resumed.nextEvents(t, a, 3)))
	byHeight := openSSE(t, a, "/v1/chains/"+testChain+"/stream?from_height=5&include=transactions", nil)
	replay := byHeight.nextEvents(t, a, 6)
	require.Equal(t, []string{"6+5:b", "7-5:b", "8-4:b", "9+4:f", "10+5:f", "11+6:f"}, summarize(replay))
	require.True(t, replay[0].Orphaned, "the block a later event removes")
	require.Nil(t, replay[0].Transactions, "an orphaned block's rows are not served")
	require.Len(t, *replay[4].Transactions, 1)

	// The websocket serves the same events.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(a.srv.URL, "http")+"/v1/chains/"+testChain+"/stream?from=1", nil)
	require.NoError(t, err)
	defer ws.CloseNow()
	var got []stream.Event
	for range 11 {
		_, b, err := ws.Read(ctx)
		require.NoError(t, err)
		require.NoError(t, a.contract.CheckSchema("StreamEvent", b))
		var e stream.Event
		require.NoError(t, json.Unmarshal(b, &e))
		got = append(got, e)
	}
	require.Equal(t, append(summarize(first), summarize(next)...), summarize(got))
}

func TestStreamRefusesBadRequests(t *testing.T) {
	a := newTestAPI(t, config.API{})
	a.write(t, sampleChain(3))
	require.Equal(t, 3, appendStream(t, a))
	base := "/v1/chains/" + testChain + "/stream"
	for _, c := range []struct{ query, param string }{
		{"?from=0", "from"},
		{"?from=x", "from"},
		{"?from=5", "from"}, // the last is 3: at most 4
		{"?from=1&from_height=1", "from"},
		{"?from_height=-1", "from_height"},
		{"?include=blocks", "include"},
		{"?limit=3", "limit"},
	} {
		code, body := a.get(t, base+c.query)
		require.Equal(t, http.StatusBadRequest, code, "%s: %s", c.query, body)
		var e apiError
		require.NoError(t, json.Unmarshal(body, &e))
		require.Equal(t, c.param, e.Parameter, "%s: %s", c.query, body)
	}
	code, _ := a.get(t, "/v1/chains/nope/stream")
	require.Equal(t, http.StatusNotFound, code)
}

func TestStreamLimitsConnectionsAndSaysWhereToResumeOnShutdown(t *testing.T) {
	a := newTestAPI(t, config.API{StreamPoll: 20 * time.Millisecond, StreamMaxConnections: 1})
	a.write(t, sampleChain(2))
	require.Equal(t, 2, appendStream(t, a))

	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- a.server.Serve(ctx, l) }()
	url := "http://" + l.Addr().String() + "/v1/chains/" + testChain + "/stream"
	resp, err := http.Get(url + "?from=1")
	require.NoError(t, err)
	defer resp.Body.Close()
	s := &sseReader{body: resp.Body, r: bufio.NewReader(resp.Body)}
	require.Equal(t, []string{"1+0:b", "2+1:b"}, summarize(s.nextEvents(t, a, 2)))

	second, err := http.Get(url)
	require.NoError(t, err)
	second.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, second.StatusCode, "one stream at a time")

	cancel()
	end := s.next(t)
	require.Equal(t, "resume", end.event)
	require.JSONEq(t, `{"from":3}`, string(end.data))
	require.NoError(t, <-served)
}
