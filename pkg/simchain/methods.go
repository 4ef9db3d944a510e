package simchain

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// rpcError is a JSON-RPC error answer. It implements go-ethereum's rpc.Error
// so that the websocket side returns the same codes.
type rpcError struct {
	code int
	msg  string
}

func (e *rpcError) Error() string  { return e.msg }
func (e *rpcError) ErrorCode() int { return e.code }

func invalidParams(format string, args ...any) *rpcError {
	return &rpcError{code: -32602, msg: "invalid argument: " + fmt.Sprintf(format, args...)}
}

var blockPool = sync.Pool{New: func() any { return new(block) }}

// appendCall appends the JSON result of one call to dst. On error dst is
// returned unchanged. corrupt asks for a malformed (but valid JSON) answer.
func (rd *renderer) appendCall(dst []byte, method string, params []json.RawMessage, corrupt bool) ([]byte, *rpcError) {
	v := rd.v
	switch method {
	case "eth_chainId":
		if corrupt {
			return append(dst, `"0xnothex"`...), nil
		}
		return appendQty(dst, rd.chainID), nil
	case "net_version":
		return strconv.AppendQuote(dst, strconv.FormatUint(rd.chainID, 10)), nil
	case "web3_clientVersion":
		return append(dst, `"simchain/v1"`...), nil
	case "eth_syncing":
		return append(dst, "false"...), nil
	case "eth_blockNumber":
		if corrupt {
			return append(dst, `"0xnothex"`...), nil
		}
		return appendQty(dst, v.head), nil
	case "eth_getBlockByNumber", "eth_getBlockByHash":
		if len(params) < 1 || len(params) > 2 {
			return dst, invalidParams("%s takes a block and a bool, got %d arguments", method, len(params))
		}
		full := false
		if len(params) == 2 {
			if err := json.Unmarshal(params[1], &full); err != nil {
				return dst, invalidParams("the second argument is not a bool: %s", params[1])
			}
		}
		var h uint64
		var ok bool
		var err *rpcError
		if method == "eth_getBlockByHash" {
			h, ok, err = v.hashArg(params[0])
		} else {
			h, ok, err = v.numberArg(params[0])
		}
		if err != nil {
			return dst, err
		}
		if !ok {
			return append(dst, "null"...), nil
		}
		b := blockPool.Get().(*block)
		defer blockPool.Put(b)
		v.build(b, h)
		return rd.appendBlock(dst, b, full, false, corrupt || v.st.poisoned[h]), nil
	case "eth_getBlockReceipts":
		if len(params) != 1 {
			return dst, invalidParams("eth_getBlockReceipts takes one block, got %d arguments", len(params))
		}
		h, ok, err := v.numberOrHashArg(params[0])
		if err != nil {
			return dst, err
		}
		if !ok {
			return append(dst, "null"...), nil
		}
		b := blockPool.Get().(*block)
		defer blockPool.Put(b)
		v.build(b, h)
		return rd.appendReceipts(dst, b, corrupt || v.st.poisoned[h]), nil
	case "eth_getTransactionReceipt", "eth_getTransactionByHash":
		if len(params) != 1 {
			return dst, invalidParams("%s takes one hash, got %d arguments", method, len(params))
		}
		hash, err := parseHash(params[0])
		if err != nil {
			return dst, err
		}
		h, i, ok := v.canonicalTx(&hash)
		if !ok {
			return append(dst, "null"...), nil
		}
		b := blockPool.Get().(*block)
		defer blockPool.Put(b)
		v.build(b, h)
		if method == "eth_getTransactionByHash" {
			return rd.appendTx(dst, b, i), nil
		}
		return rd.appendReceipt(dst, b, i, corrupt || v.st.poisoned[h]), nil
	case "debug_traceBlockByNumber", "trace_block":
		if (method == "debug_traceBlockByNumber" && v.c.cfg.NoDebugTracer) || (method == "trace_block" && v.c.cfg.NoParityTracer) {
			break
		}
		return rd.appendTraces(dst, method, params, corrupt)
	}
	return dst, &rpcError{code: -32601, msg: fmt.Sprintf("the method %s does not exist/is not available", method)}
}

// appendTraces answers debug_traceBlockByNumber (a block and the tracer's
// options, whose tracer must be the callTracer) and trace_block (a block).
func (rd *renderer) appendTraces(dst []byte, method string, params []json.RawMessage, corrupt bool) ([]byte, *rpcError) {
	v := rd.v
	debug := method == "debug_traceBlockByNumber"
	switch {
	case debug && len(params) != 2:
		return dst, invalidParams("%s takes a block and the tracer's options, got %d arguments", method, len(params))
	case !debug && len(params) != 1:
		return dst, invalidParams("%s takes one block, got %d arguments", method, len(params))
	}
	if debug {
		var opts struct {
			Tracer string `json:"tracer"`
		}
		if err := json.Unmarshal(params[1], &opts); err != nil || opts.Tracer != "callTracer" {
			return dst, invalidParams("only the callTracer is simulated, got %s", clipRaw(params[1]))
		}
	}
	h, ok, err := v.numberArg(params[0])
	if err != nil {
		return dst, err
	}
	if !ok {
		if debug {
			return dst, &rpcError{code: -32000, msg: fmt.Sprintf("block #%d not found", h)}
		}
		return append(dst, "null"...), nil
	}
	b := blockPool.Get().(*block)
	defer blockPool.Put(b)
	v.build(b, h)
	corrupt = corrupt || v.st.poisoned[h]
	if debug {
		return rd.appendDebugTraces(dst, b, corrupt), nil
	}
	return rd.appendParityTraces(dst, b, corrupt), nil
}

// numberArg resolves a block number or tag; ok is false above the head.
func (v view) numberArg(raw json.RawMessage) (h uint64, ok bool, err *rpcError) {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return 0, false, invalidParams("block number %s is not a string", clipRaw(raw))
	}
	return v.number(s)
}

func (v view) number(s string) (uint64, bool, *rpcError) {
	switch s {
	case "latest", "pending":
		return v.head, true, nil
	case "earliest":
		return 0, true, nil
	case "safe":
		return v.head - min(v.head, 32), true, nil
	case "finalized":
		return v.head - min(v.head, 64), true, nil
	}
	digits, found := strings.CutPrefix(s, "0x")
	if !found || digits == "" || len(digits) > 16 {
		return 0, false, invalidParams("block number %q is not a hex quantity or tag", s)
	}
	h, perr := strconv.ParseUint(digits, 16, 64)
	if perr != nil {
		return 0, false, invalidParams("block number %q is not a hex quantity", s)
	}
	return h, h <= v.head, nil
}

// hashArg resolves a block hash; ok is false for unknown or replaced blocks.
func (v view) hashArg(raw json.RawMessage) (uint64, bool, *rpcError) {
	hash, err := parseHash(raw)
	if err != nil {
		return 0, false, err
	}
	h, ok := v.canonicalBlock(&hash)
	return h, ok, nil
}

// numberOrHashArg takes what go-ethereum's BlockNumberOrHash accepts: a
// number, a tag, a hash, or {"blockNumber": …} / {"blockHash": …}.
func (v view) numberOrHashArg(raw json.RawMessage) (uint64, bool, *rpcError) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if len(s) == 66 {
			return v.hashArg(raw)
		}
		return v.number(s)
	}
	var o struct {
		BlockNumber *string          `json:"blockNumber"`
		BlockHash   *json.RawMessage `json:"blockHash"`
	}
	if json.Unmarshal(raw, &o) != nil || (o.BlockNumber == nil) == (o.BlockHash == nil) {
		return 0, false, invalidParams("%s is neither a block number, a hash nor an object with one of them", clipRaw(raw))
	}
	if o.BlockHash != nil {
		return v.hashArg(*o.BlockHash)
	}
	return v.number(*o.BlockNumber)
}

func parseHash(raw json.RawMessage) ([32]byte, *rpcError) {
	var hash [32]byte
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return hash, invalidParams("hash %s is not a string", clipRaw(raw))
	}
	digits, found := strings.CutPrefix(s, "0x")
	if !found || len(digits) != 64 {
		return hash, invalidParams("hash %q is not 0x and 32 bytes of hex", s)
	}
	if _, err := hex.Decode(hash[:], []byte(digits)); err != nil {
		return hash, invalidParams("hash %q is not hex", s)
	}
	return hash, nil
}

func clipRaw(raw json.RawMessage) string {
	if len(raw) > 80 {
		return string(raw[:80]) + "..."
	}
	return string(raw)
}
