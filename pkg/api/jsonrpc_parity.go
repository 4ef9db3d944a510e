package api

import (
	"encoding/json"
	"strings"

	"github.com/tideline-dev/tideline/pkg/chaindata"
)

// Parity's (OpenEthereum's, Erigon's, Reth's, anvil's) trace_transaction
// and trace_block, rebuilt from the stored frames: one flat list of
// frames, depth first, each with its trace address.

type parityTrace struct {
	Action              map[string]any   `json:"action"`
	BlockHash           string           `json:"blockHash"`
	BlockNumber         uint64           `json:"blockNumber"`
	Result              *json.RawMessage `json:"result"`
	Error               string           `json:"error,omitempty"`
	Subtraces           uint32           `json:"subtraces"`
	TraceAddress        []uint32         `json:"traceAddress"`
	TransactionHash     string           `json:"transactionHash"`
	TransactionPosition uint32           `json:"transactionPosition"`
	Type                string           `json:"type"`
}

// parityOf renders one frame.
func parityOf(f chaindata.Trace) (parityTrace, error) {
	value, err := bigQuantity(orZero(f.Value))
	if err != nil {
		return parityTrace{}, err
	}
	t := parityTrace{BlockHash: f.BlockHash, BlockNumber: f.BlockNumber, Error: f.Error, Subtraces: f.Subtraces,
		TraceAddress: f.Address, TransactionHash: f.TxHash, TransactionPosition: f.TxIndex}
	if t.TraceAddress == nil {
		t.TraceAddress = []uint32{}
	}
	var res any
	switch {
	case f.Type.IsCreation():
		t.Type = "create"
		t.Action = map[string]any{"from": f.From, "gas": quantity(f.Gas), "init": orEmptyHex(f.Input), "value": value,
			"creationMethod": string(f.Type)}
		res = map[string]any{"address": f.To, "code": orEmptyHex(f.Output), "gasUsed": quantity(f.GasUsed)}
	case bareSelfDestruct(f):
		// What the tracer did not say is null, not "" or 0.
		t.Type = "suicide"
		t.Action = map[string]any{"address": nil, "refundAddress": nil, "balance": nil}
	case f.Type == chaindata.TraceSelfDestruct:
		t.Type = "suicide"
		t.Action = map[string]any{"address": f.From, "refundAddress": f.To, "balance": value}
	default:
		t.Type = "call"
		t.Action = map[string]any{"from": f.From, "callType": string(f.Type), "gas": quantity(f.Gas),
			"input": orEmptyHex(f.Input), "to": f.To, "value": value}
		res = map[string]any{"gasUsed": quantity(f.GasUsed), "output": orEmptyHex(f.Output)}
	}
	// A frame that reverted still returned (its revert data) and used
	// gas; one that halted otherwise (out of gas, an invalid opcode) has
	// no result.
	if res != nil && (f.Error == "" || reverted(f.Error)) {
		r := result(res)
		t.Result = &r
	}
	return t, nil
}

// reverted tells a tracer's error for a REVERT ("Reverted" in parity's
// words, "execution reverted" in geth's) from the other halts.
func reverted(err string) bool {
	e := strings.ToLower(err)
	return e == "reverted" || strings.HasPrefix(e, "execution reverted")
}

// parityList renders frames, checking they belong to the rows read.
func (q *rpcReq) parityList(fs []chaindata.Trace) (json.RawMessage, *rpcError) {
	out := make([]parityTrace, 0, len(fs))
	for _, f := range fs {
		t, err := parityOf(f)
		if _, e := q.encoded(nil, err); e != nil {
			return nil, e
		}
		out = append(out, t)
	}
	return result(out), nil
}

func (q *rpcReq) traceTransaction(p rpcParams) (json.RawMessage, *rpcError) {
	if e := p.want(1, 1); e != nil {
		return nil, e
	}
	_, fs, e := q.frames(p)
	if e != nil {
		return nil, e
	}
	return q.parityList(fs)
}

func (q *rpcReq) traceBlock(p rpcParams) (json.RawMessage, *rpcError) {
	if e := p.want(1, 1); e != nil {
		return nil, e
	}
	ref, e := p.blockRefParam(0, true)
	if e != nil {
		return nil, e
	}
	b, found, e := q.block(ref)
	if e != nil || !found {
		return nil, e
	}
	_, frames, e := q.blockFrames(b)
	if e != nil {
		return nil, e
	}
	var all []chaindata.Trace
	for _, fs := range frames {
		all = append(all, fs...)
	}
	return q.parityList(all)
}
