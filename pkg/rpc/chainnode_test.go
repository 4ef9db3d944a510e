package rpc_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/rpc"
)

// chainNode is a JSON-RPC server over httptest holding generated blocks
// 1..n with their receipts, rendered once, so that it answers batches of
// many heights cheaply. fault lets a test replace the answer to one call.
type chainNode struct {
	srv      *httptest.Server
	blocks   map[uint64][]byte
	receipts map[uint64][]byte
	byHash   map[string]uint64
	txRcpt   map[string]json.RawMessage

	mu    sync.Mutex
	posts int            // HTTP requests
	calls map[string]int // calls per method
	fault func(method string, height uint64, call int) *reply
}

func newChainNode(tb testing.TB, n int, opts rpc.GenOptions) *chainNode {
	c := &chainNode{blocks: map[uint64][]byte{}, receipts: map[uint64][]byte{}, byHash: map[string]uint64{},
		txRcpt: map[string]json.RawMessage{}, calls: map[string]int{}}
	for h := uint64(1); h <= uint64(n); h++ {
		o := opts
		if o.Txs > 0 && h%10 == 0 {
			o.Txs = 0 // some empty blocks
		}
		b, r := rpc.GenBlock(h, 42, o)
		c.blocks[h], c.receipts[h] = b, r
		var head struct{ Hash string }
		require.NoError(tb, json.Unmarshal(b, &head))
		c.byHash[head.Hash] = h
		var rs []json.RawMessage
		require.NoError(tb, json.Unmarshal(r, &rs))
		for _, x := range rs {
			var tx struct{ TransactionHash string }
			require.NoError(tb, json.Unmarshal(x, &tx))
			c.txRcpt[tx.TransactionHash] = x
		}
	}
	c.srv = httptest.NewServer(http.HandlerFunc(c.serve))
	tb.Cleanup(c.srv.Close)
	return c
}

func (c *chainNode) setFault(f func(method string, height uint64, call int) *reply) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fault = f
}

func (c *chainNode) count(method string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[method]
}

func (c *chainNode) postCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.posts
}

func (c *chainNode) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var reqs []rpcRequest
	batch := bytes.HasPrefix(bytes.TrimSpace(body), []byte("["))
	if batch {
		err = json.Unmarshal(body, &reqs)
	} else {
		var one rpcRequest
		err = json.Unmarshal(body, &one)
		reqs = []rpcRequest{one}
	}
	if err != nil || len(reqs) == 0 {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	c.posts++
	c.mu.Unlock()
	var out bytes.Buffer
	if batch {
		out.WriteByte('[')
	}
	for i, req := range reqs {
		rep := c.answer(req)
		if rep.hang {
			<-r.Context().Done()
			return
		}
		if rep.status != 0 {
			http.Error(w, fmt.Sprintf("injected HTTP %d", rep.status), rep.status)
			return
		}
		if i > 0 {
			out.WriteByte(',')
		}
		// Results are pre-rendered JSON: written as they are, not
		// re-encoded, so that the server costs little beside the client.
		fmt.Fprintf(&out, `{"jsonrpc":"2.0","id":%s,`, req.ID)
		if rep.code != 0 {
			msg, _ := json.Marshal(rep.message)
			fmt.Fprintf(&out, `"error":{"code":%d,"message":%s}}`, rep.code, msg)
		} else {
			out.WriteString(`"result":`)
			out.Write(rep.result)
			out.WriteByte('}')
		}
	}
	if batch {
		out.WriteByte(']')
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out.Bytes())
}

func (c *chainNode) answer(req rpcRequest) reply {
	var param string
	if len(req.Params) > 0 {
		_ = json.Unmarshal(req.Params[0], &param)
	}
	height := uint64(0)
	if strings.HasPrefix(param, "0x") && len(param) < 20 {
		height, _ = strconv.ParseUint(param[2:], 16, 64)
	} else if h, ok := c.byHash[param]; ok {
		height = h
	}
	c.mu.Lock()
	c.calls[req.Method]++
	call := c.calls[req.Method]
	fault := c.fault
	c.mu.Unlock()
	if fault != nil {
		if rep := fault(req.Method, height, call); rep != nil {
			return *rep
		}
	}
	null := reply{result: json.RawMessage("null")}
	switch req.Method {
	case "eth_blockNumber":
		return reply{result: json.RawMessage(fmt.Sprintf(`"0x%x"`, len(c.blocks)))}
	case "eth_getBlockByNumber":
		if b, ok := c.blocks[height]; ok {
			return reply{result: b}
		}
		return null
	case "eth_getBlockReceipts":
		if r, ok := c.receipts[height]; ok {
			return reply{result: r}
		}
		return null
	case "eth_getTransactionReceipt":
		if r, ok := c.txRcpt[param]; ok {
			return reply{result: r}
		}
		return null
	default:
		return reply{code: -32601, message: "the method " + req.Method + " does not exist/is not available"}
	}
}
