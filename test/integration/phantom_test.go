package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"

	"github.com/tideline-dev/tideline/pkg/localstack"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// phantomProxy forwards JSON-RPC to a node and, once armed, answers the
// next eth_blockNumber (alone or in a batch) with a head `jump` too high,
// as a load balancer does that sends one request to a broken replica.
type phantomProxy struct {
	node  string
	jump  uint64
	armed atomic.Bool
	lied  atomic.Int32
}

func (p *phantomProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	resp, err := http.Post(p.node, "application/json", bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	answer, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	if bytes.Contains(body, []byte(`"eth_blockNumber"`)) && p.armed.CompareAndSwap(true, false) {
		answer = p.lie(body, answer)
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(answer)
}

// lie raises the eth_blockNumber result of a single or batch answer.
func (p *phantomProxy) lie(req, answer []byte) []byte {
	batch := strings.HasPrefix(strings.TrimSpace(string(req)), "[")
	var reqs, outs []map[string]json.RawMessage
	if batch {
		if json.Unmarshal(req, &reqs) != nil || json.Unmarshal(answer, &outs) != nil {
			return answer
		}
	} else {
		var one, out map[string]json.RawMessage
		if json.Unmarshal(req, &one) != nil || json.Unmarshal(answer, &out) != nil {
			return answer
		}
		reqs, outs = []map[string]json.RawMessage{one}, []map[string]json.RawMessage{out}
	}
	ids := map[string]bool{}
	for _, q := range reqs {
		if string(q["method"]) == `"eth_blockNumber"` {
			ids[string(q["id"])] = true
		}
	}
	for _, o := range outs {
		if !ids[string(o["id"])] {
			continue
		}
		var hex string
		var h uint64
		if json.Unmarshal(o["result"], &hex) != nil {
			continue
		}
		if _, err := fmt.Sscanf(hex, "0x%x", &h); err != nil {
			continue
		}
		o["result"], _ = json.Marshal(fmt.Sprintf("0x%x", h+p.jump))
		p.lied.Add(1)
	}
	var out []byte
	if batch {
		out, _ = json.Marshal(outs)
	} else {
		out, _ = json.Marshal(outs[0])
	}
	return out
}

// One answer with a head 10,000,000 too high (then honest ones) must not
// wedge the chain: the head is not confirmed (the node has no block
// there), so no scheduler takes a phantom range, no workflow is started for
// a height that does not exist, and the live heights keep being indexed
// within a few block times. (On main before this, the watermark stood
// still for good: issue 9.)
func TestPhantomHeadDoesNotWedgeTheChain(t *testing.T) {
	const chainID = "it-phantom"
	node, err := localstack.StartAnvil(filepath.Join(stack.dir, chainID), localstack.AnvilOptions{BlockTime: time.Second})
	require.NoError(t, err)
	t.Cleanup(node.Stop)
	proxy := &phantomProxy{node: node.HTTPURL, jump: 10_000_000}
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	runWorker(t, chainConfig(chainID, srv.URL))
	store := openStore(t)
	waitIndexed(t, store, chainID, nodeHead(t, node.HTTPURL), time.Minute)

	proxy.armed.Store(true)
	waitFor(t, 30*time.Second, "the phantom head answered", func() (bool, string) {
		return proxy.lied.Load() > 0, "not yet"
	})
	at := nodeHead(t, node.HTTPURL)
	// Live heights go on: ten more blocks, each indexed within a few block times.
	waitIndexed(t, store, chainID, at+10, 30*time.Second)

	_, err = temporalClient(t).DescribeWorkflowExecution(context.Background(), temporal.SchedulerID(chainID), "")
	var notFound *serviceerror.NotFound
	require.ErrorAs(t, err, &notFound, "no scheduler was started for the phantom range")
	left, err := temporal.ResetScheduler(context.Background(), temporalClient(t), "default", chainID, true)
	require.NoError(t, err)
	now := nodeHead(t, node.HTTPURL)
	for _, id := range left.Indexing {
		var h uint64
		_, err := fmt.Sscanf(id, chainID+":index:%d", &h)
		require.NoError(t, err, id)
		require.LessOrEqual(t, h, now+1, "a workflow for a height that does not exist: %s", id)
	}
	requireSameChain(t, rawConn(t), nodeClient(t, node.HTTPURL), chainID, 0, at+10)
}
