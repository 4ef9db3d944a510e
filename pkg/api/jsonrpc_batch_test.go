package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/internal/testkit"
	"github.com/tideline-dev/tideline/pkg/config"
)

// gatedNode is a node whose eth_getCode answers only once `open` calls
// wait at once (or the request's deadline passes): a batch answered one
// call after another never gets there.
type gatedNode struct {
	open int

	mu       sync.Mutex
	inFlight int
	most     int
	opened   bool
	full     chan struct{}
}

func newGatedNode(open int) *gatedNode { return &gatedNode{open: open, full: make(chan struct{})} }

func (g *gatedNode) forward(ctx context.Context, _, method string, _ []json.RawMessage) (json.RawMessage, error) {
	g.mu.Lock()
	g.inFlight++
	g.most = max(g.most, g.inFlight)
	if g.inFlight == g.open && !g.opened {
		g.opened = true
		close(g.full)
	}
	g.mu.Unlock()
	defer func() { g.mu.Lock(); g.inFlight--; g.mu.Unlock() }()
	select {
	case <-g.full:
		return json.RawMessage(`"0x6000"`), nil
	case <-ctx.Done():
		return nil, fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

// batchBody is a batch of calls, each `{"jsonrpc":"2.0",<call>}`.
func batchBody(calls ...string) string {
	for i, c := range calls {
		calls[i] = `{"jsonrpc":"2.0",` + c + `}`
	}
	return "[" + strings.Join(calls, ",") + "]"
}

// A batch's calls run side by side, api.rpc_batch_concurrency at a time
// and never more, index reads among node calls; the answer keeps the
// calls' order and ids.
func TestJSONRPCBatchRunsCallsSideBySide(t *testing.T) {
	node := newGatedNode(3)
	a := newTestAPI(t, config.API{RPCBatchConcurrency: 3}, func(o *Options) { o.Forward = node.forward })
	a.write(t, sampleChain(4))

	var calls []string
	for i := range 12 {
		if i%3 == 2 {
			calls = append(calls, fmt.Sprintf(`"id":%d,"method":"eth_blockNumber"`, i))
			continue
		}
		calls = append(calls, fmt.Sprintf(`"id":%d,"method":"ots_hasCode","params":["%s",3]`, i, addrA))
	}
	code, b := a.rpcPost(t, testChain, batchBody(calls...))
	require.Equal(t, http.StatusOK, code)
	var replies []rpcReply
	require.NoError(t, json.Unmarshal(b, &replies), "%s", b)
	require.Len(t, replies, 12)
	for i, r := range replies {
		require.Equal(t, fmt.Sprint(i), string(r.ID), "in the calls' order")
		require.Nil(t, r.Error, "call %d: %v", i, r.Error)
		want := "true"
		if i%3 == 2 {
			want = `"0x3"`
		}
		require.Equal(t, want, string(r.Result), "call %d", i)
	}
	require.Equal(t, 3, node.most, "three node calls at once, never more")
}

// The batch shares the request's time: calls still waiting on the node
// when it runs out, and calls not started by then, are answered with an
// error that names api.request_timeout (a notification gets none), in
// order, and counted as timeouts.
func TestJSONRPCBatchOutOfTimeSaysSo(t *testing.T) {
	node := newGatedNode(99) // never opens
	a := newTestAPI(t, config.API{RPCBatchConcurrency: 2, RequestTimeout: 300 * time.Millisecond},
		func(o *Options) { o.Forward = node.forward })
	a.write(t, sampleChain(4))

	calls := []string{`"method":"ots_hasCode","params":["` + addrA + `",3]`} // a notification, first
	for i := range 5 {
		calls = append(calls, fmt.Sprintf(`"id":%d,"method":"ots_hasCode","params":["%s",3]`, i, addrA))
	}
	code, b := a.rpcPost(t, testChain, batchBody(calls...))
	require.Equal(t, http.StatusOK, code)
	var replies []rpcReply
	require.NoError(t, json.Unmarshal(b, &replies), "%s", b)
	require.Len(t, replies, 5, "the notification is not answered")
	for i, r := range replies {
		require.Equal(t, fmt.Sprint(i), string(r.ID))
		require.NotNil(t, r.Error, "call %d", i)
		require.Equal(t, rpcServerError, r.Error.Code)
		require.Contains(t, r.Error.Message, "api.request_timeout, 300ms")
		if i == 0 { // started beside the notification, waiting on the node
			require.Contains(t, r.Error.Message, "before the chain's endpoints answered eth_getCode")
		} else {
			require.Contains(t, r.Error.Message, "before this call of the batch was started")
		}
	}
	require.Equal(t, 2, node.most, "only the first two started")
	v, found := testkit.Find(t, a.reg, "api_rpc_calls_total", map[string]string{"method": "ots_hasCode", "outcome": "timeout"})
	require.True(t, found)
	require.Equal(t, float64(len(calls)), v)
}
