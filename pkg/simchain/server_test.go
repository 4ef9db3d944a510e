package simchain

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestBatchRequests(t *testing.T) {
	cfg := testConfig(newFakeClock())
	s := startSim(t, cfg)
	status, out := post(t, http.DefaultClient, s.HTTPURL(), blockAndReceiptsBatch(900, 50))
	if status != http.StatusOK {
		t.Fatalf("HTTP %d", status)
	}
	var answers []rpcResponse
	if err := json.Unmarshal(out, &answers); err != nil {
		t.Fatalf("batch answer: %v", err)
	}
	if len(answers) != 100 {
		t.Fatalf("%d answers to 100 calls", len(answers))
	}
	for i, a := range answers {
		if string(a.ID) != fmt.Sprint(i) || a.Error != nil || len(a.Result) < 100 {
			t.Fatalf("answer %d: id %s error %v result %.80s", i, a.ID, a.Error, a.Result)
		}
		h := 900 + uint64(i/2)
		if i%2 == 0 {
			var b struct{ Number, Hash string }
			if err := json.Unmarshal(a.Result, &b); err != nil || b.Number != fmt.Sprintf("0x%x", h) || b.Hash != s.BlockHash(h) {
				t.Fatalf("answer %d: block %s %s (%v), want %d %s", i, b.Number, b.Hash, err, h, s.BlockHash(h))
			}
			continue
		}
		var rs []struct{ BlockHash, TransactionHash string }
		if err := json.Unmarshal(a.Result, &rs); err != nil || len(rs) != cfg.TxsPerBlock || rs[0].BlockHash != s.BlockHash(h) {
			t.Fatalf("answer %d: %d receipts (%v), want %d of block %s", i, len(rs), err, cfg.TxsPerBlock, s.BlockHash(h))
		}
		// The same receipt by transaction hash, byte for byte.
		if h == 910 {
			var all []json.RawMessage
			_ = json.Unmarshal(a.Result, &all)
			one := call(t, s.HTTPURL(), "eth_getTransactionReceipt", rs[3].TransactionHash)
			if !bytes.Equal(one, all[3]) {
				t.Fatalf("eth_getTransactionReceipt differs from the block's receipt:\n%.200s\n%.200s", one, all[3])
			}
			var tx struct{ Hash, BlockHash string }
			if err := json.Unmarshal(call(t, s.HTTPURL(), "eth_getTransactionByHash", rs[3].TransactionHash), &tx); err != nil ||
				tx.Hash != rs[3].TransactionHash || tx.BlockHash != s.BlockHash(h) {
				t.Fatalf("eth_getTransactionByHash: %+v (%v)", tx, err)
			}
		}
	}

	// One bad call does not spoil the batch.
	_, out = post(t, http.DefaultClient, s.HTTPURL(), []byte(`[{"jsonrpc":"2.0","id":1,"method":"eth_nope","params":[]},{"jsonrpc":"2.0","id":2,"method":"eth_chainId","params":[]}]`))
	answers = nil
	if err := json.Unmarshal(out, &answers); err != nil || len(answers) != 2 ||
		answers[0].Error == nil || answers[0].Error.Code != -32601 || string(answers[1].Result) != fmt.Sprintf(`"0x%x"`, cfg.ChainID) {
		t.Fatalf("mixed batch: %s", out)
	}
}

func TestBatchLimits(t *testing.T) {
	cfg := testConfig(newFakeClock())
	cfg.MaxBatchCalls = 10
	cfg.MaxResponseBytes = 100_000 // about one block with receipts
	s := startSim(t, cfg)
	_, out := post(t, http.DefaultClient, s.HTTPURL(), blockAndReceiptsBatch(10, 6))
	var one rpcResponse
	if err := json.Unmarshal(out, &one); err != nil || one.Error == nil || one.Error.Code != -32600 {
		t.Fatalf("batch above MaxBatchCalls: %.200s", out)
	}
	_, out = post(t, http.DefaultClient, s.HTTPURL(), blockAndReceiptsBatch(10, 5))
	var answers []rpcResponse
	if err := json.Unmarshal(out, &answers); err != nil || len(answers) != 10 {
		t.Fatalf("batch past MaxResponseBytes: %v, %d answers", err, len(answers))
	}
	tooLarge := 0
	for _, a := range answers {
		if a.Error != nil && a.Error.Code == -32003 {
			tooLarge++
		}
	}
	if answers[0].Error != nil || tooLarge < 5 {
		t.Fatalf("past MaxResponseBytes: first answer error %v, %d calls refused as too large", answers[0].Error, tooLarge)
	}
}

// Fault draws are deterministic per seed and request number, so the counts
// are the same at every run; the bounds say the rates are what was asked.
func TestFaultRates(t *testing.T) {
	cfg := testConfig(newFakeClock())
	cfg.TimeoutRate, cfg.TooManyRequestsRate, cfg.ServerErrorRate, cfg.MalformedRate = 0.1, 0.1, 0.1, 0.1
	cfg.TimeoutHold = 5 * time.Millisecond // then HTTP 504
	s := startSim(t, cfg)
	const requests = 400
	statuses := map[int]int{}
	malformed, calls := 0, 0
	batch := []byte(`[{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber"},{"jsonrpc":"2.0","id":2,"method":"eth_blockNumber"}]`)
	for i := 0; i < requests; i++ {
		status, out := post(t, http.DefaultClient, s.HTTPURL(), batch)
		statuses[status]++
		if status != http.StatusOK {
			continue
		}
		var answers []rpcResponse
		if err := json.Unmarshal(out, &answers); err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		for _, a := range answers {
			calls++
			if string(a.Result) == `"0xnothex"` {
				malformed++
			}
		}
	}
	within := func(what string, n, total int, rate float64) {
		t.Helper()
		if lo, hi := int(0.5*rate*float64(total)), int(1.5*rate*float64(total)); n < lo || n > hi {
			t.Errorf("%s: %d of %d, want %d..%d", what, n, total, lo, hi)
		}
	}
	within("timeouts (504)", statuses[504], requests, 0.1)
	within("HTTP 429", statuses[429], requests, 0.1)
	within("HTTP 500/502/503", statuses[500]+statuses[502]+statuses[503], requests, 0.1)
	within("malformed calls", malformed, calls, 0.1)
	st := s.Stats()
	if st.Timeouts != uint64(statuses[504]) || st.TooManyRequests != uint64(statuses[429]) || st.Malformed != uint64(malformed) {
		t.Errorf("stats %+v disagree with what the client saw: %v, %d malformed", st, statuses, malformed)
	}
}

func TestTimeoutHoldsUntilTheClientGivesUp(t *testing.T) {
	cfg := testConfig(newFakeClock())
	cfg.TimeoutRate = 1
	s := startSim(t, cfg)
	c := &http.Client{Timeout: 100 * time.Millisecond}
	_, err := c.Post(s.HTTPURL(), "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}`))
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("got %v, want a client timeout", err)
	}
	// A request still held when the chain closes is released.
	done := make(chan error, 1)
	go func() {
		resp, err := http.Post(s.HTTPURL(), "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}`))
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	// Wait (bounded) for the held request to arrive before closing.
	deadline := time.Now().Add(10 * time.Second)
	for s.Stats().Timeouts < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the second request never reached the chain")
		}
		runtime.Gosched()
	}
	_ = s.Close()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a held request outlived Close")
	}
}

func TestAdminEndpoints(t *testing.T) {
	s := startSim(t, testConfig(newFakeClock()))
	head := s.Head()
	oldHash := s.BlockHash(head)
	adm := func(method, path string) map[string]any {
		t.Helper()
		req, _ := http.NewRequest(method, s.HTTPURL()+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s %s: HTTP %d %s", method, path, resp.StatusCode, body)
		}
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		return m
	}
	if m := adm("POST", "/admin/reorg?depth=3"); m["fork"] != float64(head-3) {
		t.Fatalf("reorg answered %v", m)
	}
	if s.BlockHash(head) == oldHash {
		t.Fatal("admin reorg did not change the head")
	}
	if m := adm("POST", "/admin/jump?blocks=100"); m["head"] != float64(head+100) || s.Head() != head+100 {
		t.Fatalf("jump answered %v, head %d", m, s.Head())
	}
	if m := adm("GET", "/admin/head"); m["hash"] != s.BlockHash(head+100) {
		t.Fatalf("head answered %v", m)
	}
	adm("POST", "/admin/poison?heights=5,6")
	if st, out := post(t, http.DefaultClient, s.HTTPURL(), []byte(`{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["0x5",false]}`)); st != 200 || !bytes.Contains(out, []byte(`"hash":"`+s.BlockHash(5)[:64]+`"`)) {
		t.Fatalf("poisoned height 5 answered a well-formed hash: %.300s", out)
	}
	if m := adm("GET", "/admin/stats"); m["requests"] == float64(0) {
		t.Fatalf("stats: %v", m)
	}
	resp, err := http.Get(s.HTTPURL() + "/admin/reorg?depth=1")
	if err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("GET of a changing endpoint: %v %v", resp.StatusCode, err)
	}
	resp.Body.Close()
}
