package simchain

import (
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"strings"
	"testing"
	"time"
)

// debugFrame is a callTracer frame as a test reads it.
type debugFrame struct {
	From, To, Value, Gas, GasUsed, Input, Output, Error, RevertReason, Type string
	Calls                                                                   []debugFrame
}

func hexBig(s string) *big.Int {
	n, ok := new(big.Int).SetString(strings.TrimPrefix(s, "0x"), 16)
	if !ok {
		return new(big.Int)
	}
	return n
}

// TestTracesAreConsistentWithTheBlock checks, over many blocks, what
// traces.go promises: top-level frames are the transactions, log emitters
// are called and succeed, value is conserved, a staticcall's children are
// staticcalls, children's gas adds up, failed frames give their reason,
// and trace_block lists the same frames.
func TestTracesAreConsistentWithTheBlock(t *testing.T) {
	cfg := testConfig(newFakeClock())
	cfg.Length = 400
	s := startSim(t, cfg)
	inner, contractTxs, failed := 0, 0, 0
	for h := uint64(0); h <= 300; h += 3 {
		q := fmt.Sprintf("0x%x", h)
		var b struct {
			Transactions []struct{ Hash, From, To, Value, Input string }
		}
		mustUnmarshal(t, call(t, s.HTTPURL(), "eth_getBlockByNumber", q, true), &b)
		var receipts []struct {
			GasUsed, ContractAddress, Status string
			Logs                             []struct{ Address string }
		}
		mustUnmarshal(t, call(t, s.HTTPURL(), "eth_getBlockReceipts", q), &receipts)
		var traces []struct {
			TxHash string
			Result debugFrame
		}
		mustUnmarshal(t, call(t, s.HTTPURL(), "debug_traceBlockByNumber", q, map[string]any{"tracer": "callTracer"}), &traces)
		var flat []struct {
			Type         string
			Action       map[string]any
			TraceAddress []int
		}
		mustUnmarshal(t, call(t, s.HTTPURL(), "trace_block", q), &flat)
		if len(traces) != len(b.Transactions) {
			t.Fatalf("height %d: %d traces for %d transactions", h, len(traces), len(b.Transactions))
		}
		frames := 0
		for i, tr := range traces {
			tx, top, r := b.Transactions[i], tr.Result, receipts[i]
			if tr.TxHash != tx.Hash || top.From != tx.From || top.Value != tx.Value || top.Input != tx.Input || top.GasUsed != r.GasUsed {
				t.Fatalf("height %d tx %d: the top-level frame is not the transaction: %+v vs %+v", h, i, top, tx)
			}
			if (r.ContractAddress != "" && top.To != r.ContractAddress) || (r.ContractAddress == "" && top.To != tx.To) {
				t.Fatalf("height %d tx %d: the top-level frame goes to %s", h, i, top.To)
			}
			if (r.Status == "0x0") != (top.Error != "") {
				t.Fatalf("height %d tx %d: status %s but error %q", h, i, r.Status, top.Error)
			}
			called := map[string]bool{top.To: true}
			for _, c := range top.Calls {
				if c.Error == "" {
					called[c.To] = true
				}
			}
			for _, l := range r.Logs {
				if !called[l.Address] {
					t.Fatalf("height %d tx %d: the log emitter %s is not called", h, i, l.Address)
				}
			}
			if tx.Input != "0x" {
				contractTxs++
			}
			n := checkFrame(t, fmt.Sprintf("height %d tx %d", h, i), top, false, &failed)
			inner += n - 1
			frames += n
		}
		if len(flat) != frames {
			t.Fatalf("height %d: trace_block lists %d frames, the callTracer %d", h, len(flat), frames)
		}
	}
	avg := float64(inner) / float64(contractTxs)
	if avg < cfg.CallsPerTx*0.7 || avg > cfg.CallsPerTx*2 {
		t.Errorf("%.2f inner frames per contract transaction, for CallsPerTx %v", avg, cfg.CallsPerTx)
	}
	if failed == 0 {
		t.Error("no failed frame drawn")
	}
}

// checkFrame checks one frame's subtree and returns its frame count.
func checkFrame(t *testing.T, where string, f debugFrame, static bool, failed *int) int {
	t.Helper()
	if f.Error != "" {
		*failed++
		if f.RevertReason != revertText || f.Output != "0x"+revertOutput {
			t.Fatalf("%s: a failed frame's reason %q, output %s", where, f.RevertReason, f.Output)
		}
	}
	if static && f.Type != "STATICCALL" {
		t.Fatalf("%s: a %s in a static context", where, f.Type)
	}
	n := 1
	sent := new(big.Int)
	used := new(big.Int)
	for _, c := range f.Calls {
		n += checkFrame(t, where, c, static || f.Type == "STATICCALL", failed)
		used.Add(used, hexBig(c.GasUsed))
		switch c.Type {
		case "CALL", "CREATE", "CREATE2", "SELFDESTRUCT":
			sent.Add(sent, hexBig(c.Value))
		case "DELEGATECALL", "CALLCODE":
			// Runs in f's account: what it sends, f's account sends.
			for _, g := range c.Calls {
				if g.Type == "CALL" || g.Type == "CREATE" || g.Type == "CREATE2" || g.Type == "SELFDESTRUCT" {
					sent.Add(sent, hexBig(g.Value))
				}
			}
		}
	}
	if f.Type != "DELEGATECALL" && f.Type != "CALLCODE" && sent.Cmp(hexBig(f.Value)) > 0 {
		t.Fatalf("%s: a %s frame receiving %s sends %s", where, f.Type, hexBig(f.Value), sent)
	}
	if used.Cmp(hexBig(f.GasUsed)) > 0 {
		t.Fatalf("%s: children use %s gas of their parent's %s", where, used, hexBig(f.GasUsed))
	}
	return n
}

func mustUnmarshal(t *testing.T, raw json.RawMessage, v any) {
	t.Helper()
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("%v: %s", err, raw[:min(len(raw), 200)])
	}
}

func TestTraceKnobs(t *testing.T) {
	cfg := testConfig(newFakeClock())
	cfg.TraceLatency = 30 * time.Millisecond
	cfg.NoParityTracer = true
	s := startSim(t, cfg)
	body := []byte(`[` +
		`{"jsonrpc":"2.0","id":1,"method":"debug_traceBlockByNumber","params":["0x1",{"tracer":"callTracer"}]},` +
		`{"jsonrpc":"2.0","id":2,"method":"debug_traceBlockByNumber","params":["0x2",{"tracer":"callTracer"}]},` +
		`{"jsonrpc":"2.0","id":3,"method":"trace_block","params":["0x2"]}]`)
	began := time.Now()
	code, out := post(t, http.DefaultClient, s.HTTPURL(), body)
	if took := time.Since(began); took < 90*time.Millisecond {
		t.Errorf("three trace calls answered in %v, under 3 × TraceLatency", took)
	}
	var rs []rpcResponse
	if code != http.StatusOK || json.Unmarshal(out, &rs) != nil || len(rs) != 3 {
		t.Fatalf("HTTP %d: %s", code, out)
	}
	if rs[0].Error != nil || rs[1].Error != nil || rs[2].Error == nil || rs[2].Error.Code != -32601 {
		t.Errorf("want two traces and trace_block missing: %s", out)
	}
	s.Poison(2)
	short := append([]byte(nil), body[:strings.Index(string(body), `,{"jsonrpc":"2.0","id":3`)]...)
	code, out = post(t, http.DefaultClient, s.HTTPURL(), append(short, ']'))
	if code != http.StatusOK || !strings.Contains(string(out), `"txHash":"0x`) || json.Unmarshal(out, &rs) != nil {
		t.Fatalf("HTTP %d: %s", code, out)
	}
	var poisoned []struct{ TxHash string }
	mustUnmarshal(t, rs[1].Result, &poisoned)
	if len(poisoned[0].TxHash) != 64 {
		t.Errorf("a poisoned height's trace has a hash of %d characters, want a 31-byte one", len(poisoned[0].TxHash))
	}
}
