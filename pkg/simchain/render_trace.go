package simchain

import (
	"strconv"
	"sync"
)

// The two tracers' answers for a block (traces.go draws the frames), with
// go-ethereum's and anvil's field names and order: debug_traceBlockByNumber
// with the callTracer nests each transaction's frames ("calls"), types in
// upper case; trace_block lists them flat with their trace address, the
// details under "action" and "result". Like anvil, trace_block's top-level
// frame leaves out the intrinsic gas (21,000) from its gas used, and a
// failed frame has the error "Reverted" and its output.

var framesPool = sync.Pool{New: func() any { return new([]frame) }}

// blockFrames returns the frames of every transaction of b and where each
// transaction's start; put the slice back with framesPool.
func (v view) blockFrames(b *block) (*[]frame, []int) {
	fp := framesPool.Get().(*[]frame)
	fs := (*fp)[:0]
	starts := make([]int, len(b.txs)+1)
	for i := range b.txs {
		starts[i] = len(fs)
		fs = v.txFrames(fs, b, i)
	}
	starts[len(b.txs)] = len(fs)
	*fp = fs
	return fp, starts
}

var debugTypes = [...]string{frameCall: "CALL", frameStaticCall: "STATICCALL", frameDelegateCall: "DELEGATECALL",
	frameCallCode: "CALLCODE", frameCreate: "CREATE", frameCreate2: "CREATE2", frameSelfDestruct: "SELFDESTRUCT"}

var parityCallTypes = [...]string{frameCall: "call", frameStaticCall: "staticcall", frameDelegateCall: "delegatecall", frameCallCode: "callcode"}

// appendDebugTraces writes debug_traceBlockByNumber's callTracer answer.
func (rd *renderer) appendDebugTraces(dst []byte, b *block, corrupt bool) []byte {
	fp, starts := rd.v.blockFrames(b)
	defer framesPool.Put(fp)
	fs := *fp
	dst = append(dst, '[')
	for i := range b.txs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"txHash":`...)
		if corrupt && i == 0 {
			dst = appendData(dst, b.txs[i].hash[:31])
		} else {
			dst = append(dst, b.txs[i].hashHex[:]...)
		}
		dst = append(dst, `,"result":`...)
		dst = rd.appendDebugFrame(dst, b, i, fs[starts[i]:starts[i+1]], 0)
		dst = append(dst, '}')
	}
	return append(dst, ']')
}

// appendDebugFrame writes frame k of a transaction's frames fs with its
// children nested.
func (rd *renderer) appendDebugFrame(dst []byte, b *block, i int, fs []frame, k int) []byte {
	f := &fs[k]
	dst = append(dst, `{"from":`...)
	dst = rd.appendFrameAddr(dst, &f.from)
	dst = append(dst, `,"gas":`...)
	dst = appendQty(dst, f.gas)
	dst = append(dst, `,"gasUsed":`...)
	dst = appendQty(dst, f.gasUsed)
	dst = append(dst, `,"to":`...)
	dst = rd.appendFrameAddr(dst, &f.to)
	dst = append(dst, `,"input":"0x`...)
	dst = rd.appendFrameInput(dst, b, i, f)
	dst = append(dst, '"')
	if f.typ != frameSelfDestruct {
		dst = append(dst, `,"output":"0x`...)
		dst = rd.appendFrameOutput(dst, f)
		dst = append(dst, '"')
	}
	if f.failed {
		dst = append(dst, `,"error":"execution reverted","revertReason":"`+revertText+`"`...)
	}
	if f.subtraces > 0 {
		dst = append(dst, `,"calls":[`...)
		for c, n := k+1, 0; c < k+f.size; c += fs[c].size {
			if n > 0 {
				dst = append(dst, ',')
			}
			dst = rd.appendDebugFrame(dst, b, i, fs, c)
			n++
		}
		dst = append(dst, ']')
	}
	if f.typ != frameStaticCall {
		dst = append(dst, `,"value":`...)
		dst = appendQty128(dst, f.valueHi, f.valueLo)
	}
	dst = append(dst, `,"type":"`...)
	dst = append(dst, debugTypes[f.typ]...)
	return append(dst, `"}`...)
}

// appendParityTraces writes trace_block's answer.
func (rd *renderer) appendParityTraces(dst []byte, b *block, corrupt bool) []byte {
	fp, starts := rd.v.blockFrames(b)
	defer framesPool.Put(fp)
	fs := *fp
	dst = append(dst, '[')
	var addr []uint32
	for i := range b.txs {
		tx := fs[starts[i]:starts[i+1]]
		addr = addr[:0]
		for k := range tx {
			f := &tx[k]
			if f.depth == 0 {
				addr = addr[:0]
			} else {
				addr = append(addr[:f.depth-1], f.child)
			}
			if starts[i]+k > 0 {
				dst = append(dst, ',')
			}
			dst = rd.appendParityFrame(dst, b, i, f, addr, corrupt && starts[i]+k == 0)
		}
	}
	return append(dst, ']')
}

func (rd *renderer) appendParityFrame(dst []byte, b *block, i int, f *frame, addr []uint32, corrupt bool) []byte {
	dst = append(dst, `{"action":{`...)
	switch f.typ {
	case frameSelfDestruct:
		dst = append(dst, `"address":`...)
		dst = rd.appendFrameAddr(dst, &f.from)
		dst = append(dst, `,"balance":`...)
		dst = appendQty128(dst, f.valueHi, f.valueLo)
		dst = append(dst, `,"refundAddress":`...)
		dst = rd.appendFrameAddr(dst, &f.to)
	case frameCreate, frameCreate2:
		dst = append(dst, `"from":`...)
		dst = rd.appendFrameAddr(dst, &f.from)
		dst = append(dst, `,"gas":`...)
		dst = appendQty(dst, f.gas)
		dst = append(dst, `,"init":"0x`...)
		dst = rd.appendFrameInput(dst, b, i, f)
		dst = append(dst, `","value":`...)
		dst = appendQty128(dst, f.valueHi, f.valueLo)
		if f.typ == frameCreate2 {
			dst = append(dst, `,"creationMethod":"create2"`...)
		} else {
			dst = append(dst, `,"creationMethod":"create"`...)
		}
	default:
		dst = append(dst, `"from":`...)
		dst = rd.appendFrameAddr(dst, &f.from)
		dst = append(dst, `,"callType":"`...)
		dst = append(dst, parityCallTypes[f.typ]...)
		dst = append(dst, `","gas":`...)
		dst = appendQty(dst, f.gas)
		dst = append(dst, `,"input":"0x`...)
		dst = rd.appendFrameInput(dst, b, i, f)
		dst = append(dst, `","to":`...)
		dst = rd.appendFrameAddr(dst, &f.to)
		dst = append(dst, `,"value":`...)
		if f.typ == frameStaticCall {
			dst = append(dst, `"0x0"`...)
		} else {
			dst = appendQty128(dst, f.valueHi, f.valueLo)
		}
	}
	dst = append(dst, `},"blockHash":`...)
	if corrupt {
		dst = appendData(dst, b.hash[:31])
	} else {
		dst = append(dst, b.hashHex[:]...)
	}
	dst = append(dst, `,"blockNumber":`...)
	dst = strconv.AppendUint(dst, b.number, 10)
	if f.failed {
		dst = append(dst, `,"error":"Reverted"`...)
	}
	dst = append(dst, `,"result":`...)
	used := f.gasUsed
	if f.top {
		used = gasBudget(used)
	}
	switch f.typ {
	case frameSelfDestruct:
		dst = append(dst, "null"...)
	case frameCreate, frameCreate2:
		dst = append(dst, `{"address":`...)
		dst = rd.appendFrameAddr(dst, &f.to)
		dst = append(dst, `,"code":"0x`...)
		dst = rd.appendFrameOutput(dst, f)
		dst = append(dst, `","gasUsed":`...)
		dst = appendQty(dst, used)
		dst = append(dst, '}')
	default:
		dst = append(dst, `{"gasUsed":`...)
		dst = appendQty(dst, used)
		dst = append(dst, `,"output":"0x`...)
		dst = rd.appendFrameOutput(dst, f)
		dst = append(dst, `"}`...)
	}
	dst = append(dst, `,"subtraces":`...)
	dst = strconv.AppendUint(dst, uint64(f.subtraces), 10)
	dst = append(dst, `,"traceAddress":[`...)
	for k, a := range addr {
		if k > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendUint(dst, uint64(a), 10)
	}
	dst = append(dst, `],"transactionHash":`...)
	dst = append(dst, b.txs[i].hashHex[:]...)
	dst = append(dst, `,"transactionPosition":`...)
	dst = strconv.AppendUint(dst, uint64(i), 10)
	switch f.typ {
	case frameSelfDestruct:
		return append(dst, `,"type":"suicide"}`...)
	case frameCreate, frameCreate2:
		return append(dst, `,"type":"create"}`...)
	}
	return append(dst, `,"type":"call"}`...)
}

func (rd *renderer) appendFrameAddr(dst []byte, a *frameAddr) []byte {
	if a.created {
		return appendData(dst, a.raw[:])
	}
	return rd.appendAddr(dst, a.pool)
}

// appendFrameInput writes a frame's input as hex digits: the
// transaction's for the top-level frame, else drawn from its seed.
func (rd *renderer) appendFrameInput(dst []byte, b *block, i int, f *frame) []byte {
	if f.top {
		return rd.appendInputHex(dst, &b.txs[i])
	}
	r := rng{mix(f.seed + subInput)}
	switch f.typ {
	case frameSelfDestruct:
		return dst
	case frameCreate, frameCreate2:
		dst = append(dst, "6080604052"...)
		return appendRandHex(dst, &r, int(40+r.intn(80)))
	}
	s := rd.p.selectors[r.intn(uint64(len(rd.p.selectors)))]
	dst = appendHex(dst, s[:])
	for k := r.intn(3); k > 0; k-- {
		dst = append(dst, "000000000000000000000000"...)
		dst = appendRandHex(dst, &r, 20)
	}
	return dst
}

// revertOutput is Error(revertText), ABI-encoded, as hex digits.
var revertOutput = func() string {
	word := func(n int) string {
		s := strconv.FormatUint(uint64(n), 16)
		for len(s) < 64 {
			s = "0" + s
		}
		return s
	}
	text := appendHex(nil, []byte(revertText))
	for len(text)%64 != 0 {
		text = append(text, '0')
	}
	return "08c379a0" + word(32) + word(len(revertText)) + string(text)
}()

// appendFrameOutput writes a frame's output as hex digits: the revert
// reason of a failed frame, a created contract's code, a 32-byte word or
// nothing.
func (rd *renderer) appendFrameOutput(dst []byte, f *frame) []byte {
	if f.failed {
		return append(dst, revertOutput...)
	}
	r := rng{mix(f.seed + subSig)}
	switch f.typ {
	case frameCreate, frameCreate2:
		return appendRandHex(dst, &r, int(20+r.intn(60)))
	case frameDelegateCall, frameSelfDestruct:
		return dst
	}
	if f.top && r.intn(2) == 0 {
		return dst
	}
	return appendRandHex(dst, &r, 32)
}
