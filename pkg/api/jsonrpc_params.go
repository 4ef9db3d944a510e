package api

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// The JSON-RPC route's parameters: positional, as nodes take them, each
// refused with -32602 naming its position ("invalid argument 1: …", the
// node's wording) and what was wrong.

// rpcParams are a call's positional parameters.
type rpcParams []json.RawMessage

// paramsOf reads params: an array, or absent/null for none.
func paramsOf(raw json.RawMessage) (rpcParams, *rpcError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var p rpcParams
	if raw[0] != '[' || json.Unmarshal(raw, &p) != nil {
		return nil, rpcErrorf(rpcInvalidParams, "params must be an array of positional arguments")
	}
	return p, nil
}

func argError(i int, format string, args ...any) *rpcError {
	e := rpcErrorf(rpcInvalidParams, format, args...)
	e.Message = "invalid argument " + strconv.Itoa(i) + ": " + e.Message
	return e
}

// want checks the count: at least min (the required ones), at most max.
func (p rpcParams) want(min, max int) *rpcError {
	switch {
	case len(p) < min:
		return rpcErrorf(rpcInvalidParams, "missing value for required argument %d", len(p))
	case len(p) > max:
		return rpcErrorf(rpcInvalidParams, "too many arguments, want at most %d", max)
	}
	return nil
}

// given tells whether argument i is there and not null.
func (p rpcParams) given(i int) bool { return i < len(p) && string(bytes.TrimSpace(p[i])) != "null" }

// str reads argument i as a JSON string.
func (p rpcParams) str(i int) (string, *rpcError) {
	var s string
	if !p.given(i) || json.Unmarshal(p[i], &s) != nil {
		return "", argError(i, "want a JSON string")
	}
	return s, nil
}

// quantity reads argument i as a hex quantity (0x, no leading zeros
// required: clients send both) or a JSON number, which nodes take for an
// index (anvil answers eth_getTransactionByBlockHashAndIndex [hash, 0]).
func (p rpcParams) quantity(i int) (uint64, *rpcError) {
	if n, isNumber, e := p.number(i, "a quantity (at most 64 bits)"); isNumber {
		return n, e
	}
	s, e := p.str(i)
	if e != nil {
		return 0, e
	}
	n, ok := quantityParam(s)
	if !ok {
		return 0, argError(i, "%q is not a hex quantity (0x…, at most 64 bits)", clip(s))
	}
	return n, nil
}

// number reads argument i when it is a JSON number (isNumber); what names
// what the number should have been in the error.
func (p rpcParams) number(i int, what string) (n uint64, isNumber bool, e *rpcError) {
	if !p.given(i) {
		return 0, false, nil
	}
	raw := bytes.TrimSpace(p[i])
	if raw[0] < '0' || raw[0] > '9' {
		return 0, false, nil
	}
	if json.Unmarshal(raw, &n) != nil {
		return 0, true, argError(i, "%s is not %s", clip(string(raw)), what)
	}
	return n, true, nil
}

// boolean reads argument i, false when absent.
func (p rpcParams) boolean(i int) (bool, *rpcError) {
	if !p.given(i) {
		return false, nil
	}
	var b bool
	if json.Unmarshal(p[i], &b) != nil {
		return false, argError(i, "want true or false")
	}
	return b, nil
}

// hash reads argument i as a 32-byte hex hash, lower-cased as stored.
func (p rpcParams) hash(i int) (string, *rpcError) {
	s, e := p.str(i)
	if e != nil {
		return "", e
	}
	h, ok := hexOfLen(s, 32)
	if !ok {
		return "", argError(i, "%q is not a 32-byte hex hash", clip(s))
	}
	return h, nil
}

// hexOfLen is s lower-cased when it is 0x and n bytes of hex.
func hexOfLen(s string, n int) (string, bool) {
	if len(s) != 2+2*n || (s[:2] != "0x" && s[:2] != "0X") {
		return "", false
	}
	for _, c := range s[2:] {
		if !strings.ContainsRune("0123456789abcdefABCDEF", c) {
			return "", false
		}
	}
	return "0x" + strings.ToLower(s[2:]), true
}

// blockRef is a block parameter: a tag, a number or (where a method takes
// one) a hash.
type blockRef struct {
	tag    string // latest, pending, earliest, safe, finalized
	number uint64
	hash   string
}

// blockRefParam reads argument i: a tag or a number; with byHash also a
// hash, and EIP-1898's {"blockNumber": …} or {"blockHash": …} objects.
func (p rpcParams) blockRefParam(i int, byHash bool) (blockRef, *rpcError) {
	if !p.given(i) {
		return blockRef{}, argError(i, "want a block number or tag")
	}
	if byHash && bytes.HasPrefix(bytes.TrimSpace(p[i]), []byte("{")) {
		var o struct {
			BlockNumber *string `json:"blockNumber"`
			BlockHash   *string `json:"blockHash"`
		}
		if json.Unmarshal(p[i], &o) != nil || (o.BlockNumber == nil) == (o.BlockHash == nil) {
			return blockRef{}, argError(i, "want an object with blockNumber or blockHash")
		}
		if o.BlockHash != nil {
			return blockRefOf(i, *o.BlockHash, true)
		}
		return blockRefOf(i, *o.BlockNumber, false)
	}
	// A JSON number: Otterscan sends block numbers so.
	if n, isNumber, e := p.number(i, "a block number"); isNumber {
		return blockRef{number: n}, e
	}
	s, e := p.str(i)
	if e != nil {
		return blockRef{}, e
	}
	return blockRefOf(i, s, byHash)
}

func blockRefOf(i int, s string, byHash bool) (blockRef, *rpcError) {
	switch s {
	case "latest", "pending", "earliest", "safe", "finalized":
		return blockRef{tag: s}, nil
	}
	if byHash && len(s) == 66 {
		h, ok := hexOfLen(s, 32)
		if !ok {
			return blockRef{}, argError(i, "%q is not a 32-byte hex hash", clip(s))
		}
		return blockRef{hash: h}, nil
	}
	n, ok := quantityParam(s)
	if !ok {
		return blockRef{}, argError(i, "%q is not a block number (0x…) or tag (latest, earliest, pending, safe, finalized)", clip(s))
	}
	return blockRef{number: n}, nil
}
