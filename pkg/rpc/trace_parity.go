package rpc

import (
	"cmp"
	"encoding/json"
	"slices"

	"github.com/buger/jsonparser"

	"github.com/tideline-dev/tideline/pkg/chaindata"
)

// decodeParityTraces decodes a trace_block answer for data's block (see
// trace_decode.go for the mapping and the checks).
func (d decoder) decodeParityTraces(data *chaindata.BlockData, raw json.RawMessage) ([]chaindata.Trace, error) {
	elems, err := d.elements(raw, nil)
	if err != nil {
		return nil, d.malformed("result", "expected an array of traces, got %s", snippet(raw))
	}
	a := newArena(len(raw)/2 + 1024)
	txs := data.Transactions
	frames := make([]parityFrame, 0, len(elems))
	buf := make([]member, 0, 16)
	for i, el := range elems {
		o, err := d.objectInto(where{list: "result", i: i}, el, buf, a)
		if err != nil {
			return nil, err
		}
		buf = o.members
		typ, err := o.requiredStr("type")
		if err != nil {
			return nil, err
		}
		if string(typ) == "reward" {
			continue // a block or uncle reward: no transaction's call
		}
		f, err := d.parityFrame(o, string(typ), &data.Block, txs, a)
		if err != nil {
			return nil, err
		}
		frames = append(frames, f)
	}
	// Frames of a transaction in depth-first order: by trace address.
	slices.SortStableFunc(frames, func(x, y parityFrame) int {
		if c := cmp.Compare(x.t.TxIndex, y.t.TxIndex); c != 0 {
			return c
		}
		return slices.Compare(x.t.Address, y.t.Address)
	})
	out := make([]chaindata.Trace, 0, len(frames))
	for start := 0; start < len(frames); {
		end := start + 1
		for end < len(frames) && frames[end].t.TxIndex == frames[start].t.TxIndex {
			end++
		}
		var err error
		if out, err = d.parityTree(out, frames[start:end]); err != nil {
			return nil, err
		}
		start = end
	}
	// Every transaction has its top-level frame.
	seen := 0
	for i := range out {
		if len(out[i].Address) == 0 {
			seen++
		}
	}
	if seen != len(txs) {
		return nil, d.malformed("result", "top-level frames for %d of the block's %d transactions", seen, len(txs))
	}
	return out, nil
}

// parityFrame is one decoded trace_block element, its position not yet
// checked against its transaction's other frames.
type parityFrame struct {
	t         chaindata.Trace
	subtraces int64
	path      string // for errors
}

// parityFrame decodes one element of type typ.
func (d decoder) parityFrame(o object, typ string, b *chaindata.Block, txs []chaindata.Transaction, a *arena) (parityFrame, error) {
	f := parityFrame{path: o.path.String()}
	t := &f.t
	t.BlockNumber, t.BlockHash = b.Number, b.Hash
	if h, err := o.hexMismatch("blockHash", hashLen, false, b.Hash); err != nil {
		return f, err
	} else if h != "" {
		return f, o.malformed("blockHash", "%s, but the block is %s", h, b.Hash)
	}
	if n, ok, err := o.optInt("blockNumber"); err != nil {
		return f, err
	} else if ok && uint64(n) != b.Number {
		return f, o.malformed("blockNumber", "%d, but the block is %d", n, b.Number)
	}
	pos, ok, err := o.optInt("transactionPosition")
	if err != nil {
		return f, err
	}
	if !ok || pos < 0 || pos >= int64(len(txs)) {
		return f, o.malformed("transactionPosition", "%d is not a transaction of the block (it has %d)", pos, len(txs))
	}
	tx := &txs[pos]
	t.TxIndex, t.TxHash = tx.Index, tx.Hash
	if h, err := o.hexMismatch("transactionHash", hashLen, true, tx.Hash); err != nil {
		return f, err
	} else if h != "" {
		return f, o.malformed("transactionHash", "%s, but transaction %d of the block is %s", h, pos, tx.Hash)
	}
	if f.subtraces, ok, err = o.optInt("subtraces"); err != nil {
		return f, err
	} else if !ok || f.subtraces < 0 {
		return f, o.malformed("subtraces", "missing or negative")
	}
	addrRaw, err := o.array("traceAddress", nil)
	if err != nil {
		return f, err
	}
	if len(addrRaw) > traceStep {
		return f, o.malformed("traceAddress", "%d levels deep; the EVM stops at 1024", len(addrRaw))
	}
	if len(addrRaw) > 0 {
		t.Address = make([]uint32, len(addrRaw))
	}
	for k, v := range addrRaw {
		n, err := jsonparser.ParseInt(v)
		if err != nil || n < 0 || n > 1<<31 {
			return f, o.malformed("traceAddress", "element %d is %s, not a child position", k, snippet(v))
		}
		t.Address[k] = uint32(n)
	}
	if t.Error, err = o.optText("error"); err != nil {
		return f, err
	}
	act, err := d.objectInto(where{name: o.field("action")}, fieldOf(o, "action"), nil, a)
	if err != nil {
		return f, err
	}
	var res object
	hasResult := o.has("result")
	if hasResult {
		if res, err = d.objectInto(where{name: o.field("result")}, fieldOf(o, "result"), nil, a); err != nil {
			return f, err
		}
	}
	switch typ {
	case "call":
		err = parityCall(t, act, res, hasResult)
	case "create":
		err = parityCreate(t, act, res, hasResult)
	case "suicide", "selfdestruct":
		err = paritySelfDestruct(t, act)
	default:
		return f, o.malformed("type", "%q is not call, create, suicide or reward", typ)
	}
	if err != nil {
		return f, err
	}
	if t.Error != "" && t.RevertReason == "" {
		t.RevertReason = revertReason(t.Output)
	}
	return f, nil
}

// fieldOf is the raw value of a member ("null" when absent).
func fieldOf(o object, key string) []byte {
	if m, ok := o.get(key); ok {
		return m.val
	}
	return []byte("null")
}

func parityCall(t *chaindata.Trace, act, res object, hasResult bool) error {
	ct, err := act.requiredStr("callType")
	if err != nil {
		return err
	}
	switch chaindata.TraceType(ct) {
	case chaindata.TraceCall, chaindata.TraceCallCode, chaindata.TraceDelegateCall, chaindata.TraceStaticCall:
		t.Type = chaindata.TraceType(ct)
	default:
		return act.malformed("callType", "%s is not call, callcode, delegatecall or staticcall", clip(ct))
	}
	if t.From, err = act.hexBytes("from", addressLen); err != nil {
		return err
	}
	if t.To, err = act.hexBytes("to", addressLen); err != nil {
		return err
	}
	if t.Value, err = act.optBigQuantity("value"); err != nil {
		return err
	}
	if t.Gas, err = act.quantity("gas"); err != nil {
		return err
	}
	if t.Input, err = act.optHexBytes("input", anyLen); err != nil {
		return err
	}
	if hasResult {
		if t.GasUsed, err = res.quantity("gasUsed"); err != nil {
			return err
		}
		if t.Output, err = res.optHexBytes("output", anyLen); err != nil {
			return err
		}
	}
	return nil
}

func parityCreate(t *chaindata.Trace, act, res object, hasResult bool) error {
	t.Type = chaindata.TraceCreate
	method, ok, err := act.str("creationMethod")
	switch {
	case err != nil:
		return err
	case !ok, string(method) == "create":
	case string(method) == "create2":
		t.Type = chaindata.TraceCreate2
	default:
		return act.malformed("creationMethod", "%s is not create or create2", clip(method))
	}
	if t.From, err = act.hexBytes("from", addressLen); err != nil {
		return err
	}
	if t.Value, err = act.optBigQuantity("value"); err != nil {
		return err
	}
	if t.Gas, err = act.quantity("gas"); err != nil {
		return err
	}
	if t.Input, err = act.optHexBytes("init", anyLen); err != nil {
		return err
	}
	if hasResult {
		if t.GasUsed, err = res.quantity("gasUsed"); err != nil {
			return err
		}
		if t.To, err = res.optHexBytes("address", addressLen); err != nil {
			return err
		}
		if t.Output, err = res.optHexBytes("code", anyLen); err != nil {
			return err
		}
	}
	return nil
}

func paritySelfDestruct(t *chaindata.Trace, act object) error {
	t.Type = chaindata.TraceSelfDestruct
	var err error
	if t.From, err = act.hexBytes("address", addressLen); err != nil {
		return err
	}
	if t.To, err = act.hexBytes("refundAddress", addressLen); err != nil {
		return err
	}
	t.Value, err = act.optBigQuantity("balance")
	return err
}

// parityTree checks the frames of one transaction, sorted by trace
// address, as one tree (one top-level frame; each frame's parent present,
// children numbered 0, 1, … as many as its subtraces) and appends them
// with their index and Reverted mark.
func (d decoder) parityTree(out []chaindata.Trace, frames []parityFrame) ([]chaindata.Trace, error) {
	if len(frames[0].t.Address) != 0 {
		return nil, d.malformed(frames[0].path, "transaction %s has no top-level frame (trace address [])", frames[0].t.TxHash)
	}
	// stack[k] is the open frame at depth k: its index in frames and the
	// children seen so far.
	type open struct{ i, children int }
	stack := make([]open, 0, 8)
	for i := range frames {
		f := &frames[i]
		depth := len(f.t.Address)
		if i > 0 && depth == 0 {
			return nil, d.malformed(f.path, "transaction %s has two top-level frames", f.t.TxHash)
		}
		for len(stack) > depth {
			if err := d.closeFrame(frames, stack[len(stack)-1].i, stack[len(stack)-1].children); err != nil {
				return nil, err
			}
			stack = stack[:len(stack)-1]
		}
		if depth > 0 {
			if len(stack) != depth {
				return nil, d.malformed(f.path, "trace address %v has no parent frame", f.t.Address)
			}
			p := &stack[depth-1]
			if !slices.Equal(frames[p.i].t.Address, f.t.Address[:depth-1]) || int(f.t.Address[depth-1]) != p.children {
				return nil, d.malformed(f.path, "trace address %v does not follow its parent's child %d", f.t.Address, p.children)
			}
			p.children++
		}
		parentReverted := depth > 0 && out[len(out)-(i-stack[depth-1].i)].Reverted
		f.t.Index = uint32(i)
		f.t.Subtraces = uint32(f.subtraces)
		normalise(&f.t, parentReverted)
		out = append(out, f.t)
		stack = append(stack, open{i: i})
	}
	for k := len(stack) - 1; k >= 0; k-- {
		if err := d.closeFrame(frames, stack[k].i, stack[k].children); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// closeFrame checks that a frame had the children its subtraces says.
func (d decoder) closeFrame(frames []parityFrame, i, children int) error {
	if f := &frames[i]; f.subtraces != int64(children) {
		return d.malformed(f.path+".subtraces", "%d, but the frame at trace address %v has %d children", f.subtraces, f.t.Address, children)
	}
	return nil
}
