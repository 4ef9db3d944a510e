package testkit

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/chaindata"
)

// A second reading of the two tracers' answers, written apart from
// pkg/rpc's decoder (plain encoding/json, no checks) so that tests can
// say "what tideline stored is what the node answered" without trusting
// the code under test. It follows the model's rules (chaindata.Trace): lower
// case types, "0" for an absent value, "0x" for absent data, frames depth
// first, Reverted from the ancestors, a parity frame's revert reason from
// an Error(string) output.

// TracesOf reads a debug_traceBlockByNumber callTracer result (mode
// "debug") or a trace_block result (mode "parity") of the block whose
// transaction hashes are txHashes, in order.
func TracesOf(mode string, result json.RawMessage, number uint64, blockHash string, txHashes []string) ([]chaindata.Trace, error) {
	if mode == "parity" {
		return parityTraces(result, number, blockHash, txHashes)
	}
	var txs []struct {
		TxHash string         `json:"txHash"`
		Result map[string]any `json:"result"`
	}
	if err := json.Unmarshal(result, &txs); err != nil {
		return nil, err
	}
	if len(txs) != len(txHashes) {
		return nil, fmt.Errorf("%d transaction traces for %d transactions", len(txs), len(txHashes))
	}
	var out []chaindata.Trace
	for i, tx := range txs {
		base := chaindata.Trace{BlockNumber: number, BlockHash: blockHash, TxIndex: uint32(i), TxHash: txHashes[i]}
		n := uint32(0)
		var walk func(f map[string]any, addr []uint32, reverted bool)
		walk = func(f map[string]any, addr []uint32, reverted bool) {
			t := base
			t.Index, n = n, n+1
			t.Address = slices.Clone(addr)
			t.Type = chaindata.TraceType(strings.ToLower(str(f["type"])))
			t.From, t.To = strings.ToLower(str(f["from"])), strings.ToLower(str(f["to"]))
			t.Value = decimal(str(f["value"]))
			t.Gas, t.GasUsed = quantity(str(f["gas"])), quantity(str(f["gasUsed"]))
			t.Input, t.Output = data(str(f["input"])), data(str(f["output"]))
			t.Error, t.RevertReason = str(f["error"]), str(f["revertReason"])
			t.Reverted = reverted || t.Error != ""
			calls, _ := f["calls"].([]any)
			t.Subtraces = uint32(len(calls))
			out = append(out, t)
			for k, c := range calls {
				walk(c.(map[string]any), append(addr, uint32(k)), t.Reverted)
			}
		}
		walk(tx.Result, nil, false)
	}
	return out, nil
}

func parityTraces(result json.RawMessage, number uint64, blockHash string, txHashes []string) ([]chaindata.Trace, error) {
	var frames []struct {
		Type         string         `json:"type"`
		Action       map[string]any `json:"action"`
		Result       map[string]any `json:"result"`
		Error        string         `json:"error"`
		Subtraces    uint32         `json:"subtraces"`
		TraceAddress []uint32       `json:"traceAddress"`
		Position     *uint32        `json:"transactionPosition"`
	}
	if err := json.Unmarshal(result, &frames); err != nil {
		return nil, err
	}
	var out []chaindata.Trace
	for _, f := range frames {
		if f.Type == "reward" {
			continue
		}
		a, r := f.Action, f.Result
		t := chaindata.Trace{BlockNumber: number, BlockHash: blockHash, TxIndex: *f.Position, TxHash: txHashes[*f.Position],
			Address: f.TraceAddress, Error: f.Error, Subtraces: f.Subtraces}
		if len(t.Address) == 0 {
			t.Address = nil
		}
		switch f.Type {
		case "call":
			t.Type = chaindata.TraceType(str(a["callType"]))
			t.From, t.To, t.Value = strings.ToLower(str(a["from"])), strings.ToLower(str(a["to"])), decimal(str(a["value"]))
			t.Gas, t.Input = quantity(str(a["gas"])), data(str(a["input"]))
			t.GasUsed, t.Output = quantity(str(r["gasUsed"])), data(str(r["output"]))
		case "create":
			t.Type = chaindata.TraceCreate
			if str(a["creationMethod"]) == "create2" {
				t.Type = chaindata.TraceCreate2
			}
			t.From, t.Value, t.Gas, t.Input = strings.ToLower(str(a["from"])), decimal(str(a["value"])), quantity(str(a["gas"])), data(str(a["init"]))
			t.To, t.GasUsed, t.Output = strings.ToLower(str(r["address"])), quantity(str(r["gasUsed"])), data(str(r["code"]))
		default: // suicide
			t.Type = chaindata.TraceSelfDestruct
			t.From, t.To, t.Value = strings.ToLower(str(a["address"])), strings.ToLower(str(a["refundAddress"])), decimal(str(a["balance"]))
			t.Input, t.Output = "0x", "0x"
		}
		if t.Error != "" {
			t.RevertReason = errorString(t.Output)
		}
		out = append(out, t)
	}
	slices.SortStableFunc(out, func(x, y chaindata.Trace) int {
		if x.TxIndex != y.TxIndex {
			return int(x.TxIndex) - int(y.TxIndex)
		}
		return slices.Compare(x.Address, y.Address)
	})
	// Index within the transaction and Reverted from the ancestors.
	for i := range out {
		if i > 0 && out[i-1].TxIndex == out[i].TxIndex {
			out[i].Index = out[i-1].Index + 1
		}
		out[i].Reverted = out[i].Error != ""
		for j := i - 1; j >= 0 && out[j].TxIndex == out[i].TxIndex; j-- {
			if len(out[j].Address) < len(out[i].Address) && slices.Equal(out[j].Address, out[i].Address[:len(out[j].Address)]) && out[j].Reverted {
				out[i].Reverted = true
			}
		}
	}
	return out, nil
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func quantity(s string) uint64 {
	if s == "" {
		return 0
	}
	n, _ := new(big.Int).SetString(strings.TrimPrefix(s, "0x"), 16)
	return n.Uint64()
}

func decimal(s string) string {
	if s == "" {
		return "0"
	}
	n, _ := new(big.Int).SetString(strings.TrimPrefix(s, "0x"), 16)
	return n.String()
}

func data(s string) string {
	if s == "" {
		return "0x"
	}
	return strings.ToLower(s)
}

// errorString decodes an Error(string) revert output (the ABI encoding
// of one string after the selector 0x08c379a0), "" for anything else.
func errorString(output string) string {
	b, err := hex.DecodeString(strings.TrimPrefix(output, "0x"))
	if err != nil || len(b) < 4+64 || hex.EncodeToString(b[:4]) != "08c379a0" {
		return ""
	}
	b = b[4:]
	off := new(big.Int).SetBytes(b[:32])
	if !off.IsUint64() || off.Uint64()+32 > uint64(len(b)) {
		return ""
	}
	o := off.Uint64()
	n := new(big.Int).SetBytes(b[o : o+32])
	if !n.IsUint64() || o+32+n.Uint64() > uint64(len(b)) {
		return ""
	}
	return string(b[o+32 : o+32+n.Uint64()])
}

// NewestVersion is the highest version among a chain's rows of table at
// or below a height (every version, merged or not): a write of any of
// them raises it, so a test can tell that nothing was written again.
func NewestVersion(t testing.TB, addr, database, table, chainID string, upTo uint64) uint64 {
	t.Helper()
	conn := connect(t, addr, database)
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	height := "block_number"
	if table == "blocks" {
		height = "number"
	}
	var v uint64
	require.NoError(t, conn.QueryRow(ctx, "SELECT max(version) FROM "+table+" WHERE chain_id = ? AND "+height+" <= ?",
		chainID, upTo).Scan(&v))
	return v
}
