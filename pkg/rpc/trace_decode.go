package rpc

import (
	"encoding/binary"
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/buger/jsonparser"

	"github.com/tideline-dev/tideline/pkg/chaindata"
)

// Decoding the two tracers' answers into chaindata.Trace, checked against the
// block they were asked for, as strictly as blocks and receipts are.
//
// debug_traceBlockByNumber(h, {"tracer": "callTracer"}) answers one
// element per transaction, in block order: {"txHash", "result"} where
// result is the top-level frame with its children nested in "calls"
// (geth, reth and anvil write types in upper case). An element with an
// "error" instead of a result is a transaction the node failed to trace
// (geth's per-transaction timeout): the height's trace is not had yet.
//
// trace_block(h) answers a flat list of frames, each naming its block,
// transaction and trace address; a call's details are in "action" and
// "result", a creation's created contract in result.address and its code
// in result.code, a self-destruct ("suicide") names the contract in
// action.address, the beneficiary in action.refundAddress and the balance
// in action.balance. Block and uncle rewards (type "reward", no
// transaction) are not calls of a transaction and are left out.
//
// Both become the same frames: types in lower case (a parity create with
// creationMethod "create2" is a create2), a value of "0" where none is
// given, "0x" for empty data, the frames of a transaction depth first. A
// frame's own error is kept as the node words it; Reverted marks it and
// its descendants. The revert reason is the debug tracer's revertReason;
// trace_block has none, so it is read from a reverting frame's output
// when that is an Error(string), as geth's tracer does.
//
// What is checked: one result per transaction (debug) or one top-level
// frame per transaction (parity), the transaction hashes, the block hash
// and number parity repeats, every trace address's parent and the
// subtraces counts, hex and quantities. A block without transactions has
// no frames: its trace answer is not looked at (geth cannot trace the
// genesis block at all).

// traceStep bounds how deep calls nest in an answer: the EVM stops at
// 1,024, so a deeper answer is not a real one.
const traceStep = 1100

// decodeCallTraces decodes a debug_traceBlockByNumber callTracer answer
// for data's block. failed is set (and the error nil) when the node said
// it could not trace one of the transactions: asking again may succeed.
func (d decoder) decodeCallTraces(data *chaindata.BlockData, raw json.RawMessage) (traces []chaindata.Trace, failed string, kept Incomplete, err error) {
	elems, err := d.elements(raw, nil)
	if err != nil {
		return nil, "", nil, d.malformed("result", "expected an array of transaction traces, got %s", snippet(raw))
	}
	txs := data.Transactions
	if len(elems) != len(txs) {
		return nil, "", nil, d.malformed("result", "%d transaction traces for %d transactions", len(elems), len(txs))
	}
	a := newArena(len(raw)/2 + 1024)
	w := callWalker{d: d, a: a, block: &data.Block, buf: make([]member, 0, 16)}
	txBuf := make([]member, 0, 4)
	for i, el := range elems {
		tx := &txs[i]
		o, err := d.objectInto(where{list: "result", i: i}, el, txBuf, a)
		if err != nil {
			return nil, "", nil, err
		}
		if h, err := o.hexMismatch("txHash", hashLen, false, tx.Hash); err != nil {
			return nil, "", nil, err
		} else if h != "" {
			return nil, "", nil, o.malformed("txHash", "%s, but transaction %d of the block is %s", h, i, tx.Hash)
		}
		if msg, ok, err := o.str("error"); err != nil {
			return nil, "", nil, err
		} else if ok && !o.has("result") {
			return nil, "transaction " + tx.Hash + ": " + string(msg), nil, nil
		}
		m, present := o.get("result")
		if !present || m.typ != jsonparser.Object {
			return nil, "", nil, o.malformed("result", "expected the transaction's call frame, got %s", snippet(m.val))
		}
		txBuf = o.members[:0]
		w.tx, w.next, w.path = tx, 0, w.path[:0]
		if traces, err = w.frame(traces, m.val, false, i); err != nil {
			return nil, "", nil, err
		}
	}
	return traces, "", w.kept, nil
}

// callWalker walks one transaction's nested callTracer frames.
type callWalker struct {
	d     decoder
	a     *arena
	block *chaindata.Block
	tx    *chaindata.Transaction
	next  uint32 // the next frame's index in the transaction
	buf   []member
	// path is the trace address of the frame being walked, and calls[d]
	// the buffer of the children of the frame at depth d: a frame's
	// children are all walked before its next sibling reuses it.
	path  []uint32
	calls [][]json.RawMessage
	// addrs is where the frames' Address slices are cut from, each with
	// its own capacity, so that one allocation serves many frames.
	addrs []uint32
	// kept counts, by reason, the frames kept although a field was
	// missing (Incomplete).
	kept Incomplete
}

// Incomplete counts, by reason, the parts of an answer that were kept
// although a field was missing: well-formed, but less than a current
// client says. A missing field that no answer may lack is a
// *MalformedError instead.
type Incomplete map[string]int

// Reasons of Incomplete (rpc_answers_incomplete_total's reason label).
const (
	// Older geth tracers report a SELFDESTRUCT frame as its type alone
	// ({"type":"SELFDESTRUCT"}, 2016-era clients): kept with an empty
	// from and to and a value of 0.
	IncompleteSelfDestructFrom  = "selfdestruct_without_from"
	IncompleteSelfDestructTo    = "selfdestruct_without_to"
	IncompleteSelfDestructValue = "selfdestruct_without_value"
)

func (k *Incomplete) add(reason string) {
	if *k == nil {
		*k = Incomplete{}
	}
	(*k)[reason]++
}

// frame appends the frame raw, at trace address w.path, and its
// children, depth first.
func (w *callWalker) frame(out []chaindata.Trace, raw []byte, parentReverted bool, txPos int) ([]chaindata.Trace, error) {
	depth := len(w.path)
	if depth > traceStep {
		return nil, w.d.malformed(where{list: "result", i: txPos}.String(), "calls nested deeper than %d", traceStep)
	}
	path := where{list: "result", i: txPos, sub: "frames", j: int(w.next)}
	o, err := w.d.objectInto(path, raw, w.buf[:0], w.a)
	if err != nil {
		return nil, err
	}
	w.buf = o.members[:0]
	t := chaindata.Trace{
		BlockNumber: w.block.Number, BlockHash: w.block.Hash, TxIndex: w.tx.Index, TxHash: w.tx.Hash,
		Index: w.next, Address: w.address(),
	}
	w.next++
	typ, err := o.requiredStr("type")
	if err != nil {
		return nil, err
	}
	var known bool
	if t.Type, known = chaindata.ParseTraceType(typ); !known {
		return nil, o.malformed("type", "%s is not a frame type this indexer knows (CALL, CALLCODE, DELEGATECALL, STATICCALL, CREATE, CREATE2, SELFDESTRUCT)", clip(typ))
	}
	if t.Type == chaindata.TraceSelfDestruct {
		// What an old tracer leaves out is kept out (counted), not
		// guessed, and the frame is kept: one such answer must not hold
		// the chain for ever.
		if t.From, err = o.optHexBytes("from", addressLen); err != nil {
			return nil, err
		} else if t.From == "" {
			w.kept.add(IncompleteSelfDestructFrom)
		}
		if !o.has("to") {
			w.kept.add(IncompleteSelfDestructTo)
		}
		if !o.has("value") {
			w.kept.add(IncompleteSelfDestructValue)
		}
	} else if t.From, err = o.hexBytes("from", addressLen); err != nil {
		return nil, err
	}
	if t.To, err = o.optHexBytes("to", addressLen); err != nil {
		return nil, err
	}
	if t.Value, err = o.optBigQuantity("value"); err != nil {
		return nil, err
	}
	if t.Gas, _, err = o.optQuantity("gas"); err != nil {
		return nil, err
	}
	if t.GasUsed, _, err = o.optQuantity("gasUsed"); err != nil {
		return nil, err
	}
	if t.Input, err = o.optHexBytes("input", anyLen); err != nil {
		return nil, err
	}
	if t.Output, err = o.optHexBytes("output", anyLen); err != nil {
		return nil, err
	}
	if t.Error, err = o.optText("error"); err != nil {
		return nil, err
	}
	if t.RevertReason, err = o.optText("revertReason"); err != nil {
		return nil, err
	}
	normalise(&t, parentReverted)
	if len(w.calls) <= depth {
		w.calls = append(w.calls, nil)
	}
	var calls []json.RawMessage
	if o.has("calls") {
		if calls, err = o.array("calls", w.calls[depth]); err != nil {
			return nil, err
		}
		w.calls[depth] = calls[:0]
	}
	t.Subtraces = uint32(len(calls))
	out = append(out, t)
	w.path = append(w.path, 0)
	for k, c := range calls {
		w.path[depth] = uint32(k)
		if out, err = w.frame(out, c, t.Reverted, txPos); err != nil {
			return nil, err
		}
	}
	w.path = w.path[:depth]
	return out, nil
}

// address returns a copy of w.path for a frame's Address (nil for a
// top-level frame), cut from w.addrs.
func (w *callWalker) address() []uint32 {
	n := len(w.path)
	if n == 0 {
		return nil
	}
	if cap(w.addrs)-len(w.addrs) < n {
		w.addrs = make([]uint32, 0, max(512, n))
	}
	at := len(w.addrs)
	w.addrs = append(w.addrs, w.path...)
	return w.addrs[at : at+n : at+n]
}

// normalise gives a decoded frame the model's empty values and its
// Reverted mark.
func normalise(t *chaindata.Trace, parentReverted bool) {
	if t.Value == "" {
		t.Value = "0"
	}
	if t.Input == "" {
		t.Input = "0x"
	}
	if t.Output == "" {
		t.Output = "0x"
	}
	t.Reverted = parentReverted || t.Error != ""
}

// optText returns a string field as text ("" when absent or null).
func (o object) optText(key string) (string, error) {
	s, ok, err := o.str(key)
	if err != nil || !ok {
		return "", err
	}
	return string(o.a.copy(s)), nil
}

// optInt returns a JSON number field (ok false when absent or null).
func (o object) optInt(key string) (int64, bool, error) {
	m, present := o.get(key)
	if !present || m.typ == jsonparser.Null {
		return 0, false, nil
	}
	if m.typ != jsonparser.Number {
		return 0, false, o.malformed(key, "expected a number, got %s", snippet(m.val))
	}
	n, err := jsonparser.ParseInt(m.val)
	if err != nil {
		return 0, false, o.malformed(key, "expected a whole number, got %s", snippet(m.val))
	}
	return n, true, nil
}

// revertReason reads the reason of an Error(string) revert from a frame's
// output (0x-hex): the selector 0x08c379a0, then the ABI encoding of one
// string (an offset, a length, the bytes). Anything else has no reason.
func revertReason(output string) string {
	const selector = "0x08c379a0"
	if len(output) < len(selector)+128 || output[:len(selector)] != selector || len(output)%2 != 0 {
		return ""
	}
	b := make([]byte, (len(output)-len(selector))/2)
	for i := range b {
		b[i] = unhex(output[len(selector)+2*i])<<4 | unhex(output[len(selector)+2*i+1])
	}
	word := func(at uint64) (uint64, bool) {
		if at+32 > uint64(len(b)) {
			return 0, false
		}
		for _, c := range b[at : at+24] {
			if c != 0 {
				return 0, false
			}
		}
		return binary.BigEndian.Uint64(b[at+24 : at+32]), true
	}
	off, ok := word(0)
	if !ok {
		return ""
	}
	n, ok := word(off)
	if !ok || n > uint64(len(b))-(off+32) {
		return ""
	}
	text := b[off+32 : off+32+n]
	if !utf8.Valid(text) {
		return ""
	}
	return string(text)
}

// itoa names a number in an error.
func itoa(n int) string { return strconv.Itoa(n) }
