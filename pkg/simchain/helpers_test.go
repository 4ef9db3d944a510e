package simchain

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"
)

// fakeClock moves only when a test says so.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// testConfig is the default mix on a fake clock.
func testConfig(clock *fakeClock) Config {
	cfg := DefaultConfig()
	cfg.Now = clock.Now
	return cfg
}

func startSim(t testing.TB, cfg Config) *Sim {
	t.Helper()
	s, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// rpcResponse is one JSON-RPC answer as a test reads it.
type rpcResponse struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// post sends body and returns the HTTP status and body.
func post(t testing.TB, c *http.Client, url string, body []byte) (int, []byte) {
	t.Helper()
	resp, err := c.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	return resp.StatusCode, out
}

// call sends one call and returns its raw result, failing on an error.
func call(t testing.TB, url, method string, params ...any) json.RawMessage {
	t.Helper()
	ps, _ := json.Marshal(params)
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":%q,"params":%s}`, method, ps)
	status, out := post(t, http.DefaultClient, url, []byte(body))
	if status != http.StatusOK {
		t.Fatalf("%s: HTTP %d: %s", method, status, out)
	}
	var r rpcResponse
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("%s: answer is not JSON-RPC: %v: %.200s", method, err, out)
	}
	if r.Error != nil {
		t.Fatalf("%s: error %d %s", method, r.Error.Code, r.Error.Message)
	}
	if string(r.ID) != "7" {
		t.Fatalf("%s: id %s, want 7", method, r.ID)
	}
	return r.Result
}

// blockAndReceiptsBatch is a batch of eth_getBlockByNumber(full) and
// eth_getBlockReceipts for heights from..from+n-1.
func blockAndReceiptsBatch(from uint64, n int) []byte {
	var b bytes.Buffer
	b.WriteByte('[')
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		h := from + uint64(i)
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"eth_getBlockByNumber","params":["0x%x",true]},`, 2*i, h)
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"eth_getBlockReceipts","params":["0x%x"]}`, 2*i+1, h)
	}
	b.WriteByte(']')
	return b.Bytes()
}
