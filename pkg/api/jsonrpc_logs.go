package api

import (
	"bytes"
	"encoding/json"

	"github.com/tideline-dev/tideline/pkg/storage"
)

// eth_getLogs from the index: any range of served heights in one read
// (address_logs narrows the heights of an address filter, topic_heights
// those of each topic position), bounded by the
// number of logs answered (api.rpc_max_logs), not by blocks. A filter
// matching more is refused with -32005 and the range that fits, so a
// client can page by ranges. Semantics as a node's: fromBlock and toBlock
// default to latest (the watermark), or blockHash alone; an address or a
// list of them; topics by position, each null (any), a value or a list of
// values (any of them; a null in the list makes the position any).
//
// Unlike a node, a toBlock number above the watermark is refused rather
// than cut to it: a client that polls by ranges would otherwise move past
// heights it was never given.

// logFilterArg is eth_getLogs' filter object as sent.
type logFilterArg struct {
	FromBlock *string           `json:"fromBlock"`
	ToBlock   *string           `json:"toBlock"`
	BlockHash *string           `json:"blockHash"`
	Address   json.RawMessage   `json:"address"`
	Topics    []json.RawMessage `json:"topics"`
}

func (q *rpcReq) logs(p rpcParams) (json.RawMessage, *rpcError) {
	if e := p.want(1, 1); e != nil {
		return nil, e
	}
	var arg logFilterArg
	if !bytes.HasPrefix(bytes.TrimSpace(p[0]), []byte("{")) || json.Unmarshal(p[0], &arg) != nil {
		return nil, argError(0, "want a filter object (fromBlock, toBlock, blockHash, address, topics)")
	}
	var f storage.LogFilter
	var e *rpcError
	if f.AnyAddress, e = addressesArg(arg.Address); e != nil {
		return nil, e
	}
	if f.AnyTopic, e = topicsArg(arg.Topics); e != nil {
		return nil, e
	}
	from, to, blockHash, found, e := q.logRange(arg)
	if e != nil || !found {
		return nil, e
	}
	max := q.s.cfg.RPCMaxLogs
	logs, err := q.s.store.Chain.Logs(q.r.Context(), q.id, storage.LogQuery{From: from, To: to, Filter: f, Limit: max + 1})
	if err != nil {
		return nil, q.storeFailed(err)
	}
	if len(logs) > max {
		next := logs[max].BlockNumber
		if next == from {
			return nil, rpcErrorf(rpcLimitExceeded, "query returns more than %d results: block %d alone has more (api.rpc_max_logs); narrow the filter", max, from)
		}
		return nil, rpcErrorf(rpcLimitExceeded, "query returns more than %d results (api.rpc_max_logs); try with this block range [0x%x, 0x%x]", max, from, next-1)
	}
	out := make([]json.RawMessage, 0, len(logs))
	for _, l := range logs {
		if blockHash != "" && l.BlockHash != blockHash {
			continue
		}
		r, e := q.encoded(rpcLog(l))
		if e != nil {
			return nil, e
		}
		out = append(out, r)
	}
	return result(out), nil
}

// logRange resolves the filter's heights; found is false when nothing is
// indexed yet (an empty answer: the range holds no served block).
func (q *rpcReq) logRange(arg logFilterArg) (from, to uint64, blockHash string, found bool, e *rpcError) {
	if arg.BlockHash != nil {
		if arg.FromBlock != nil || arg.ToBlock != nil {
			return 0, 0, "", false, argError(0, "give blockHash or fromBlock/toBlock, not both")
		}
		h, ok := hexOfLen(*arg.BlockHash, 32)
		if !ok {
			return 0, 0, "", false, argError(0, "blockHash %q is not a 32-byte hex hash", clip(*arg.BlockHash))
		}
		b, found, e := q.block(blockRef{hash: h})
		switch {
		case e != nil:
			return 0, 0, "", false, e
		case !found:
			return 0, 0, "", false, rpcErrorf(rpcServerError, "unknown block %s", h)
		}
		return b.Number, b.Number, h, true, nil
	}
	v, e := q.view()
	if e != nil {
		return 0, 0, "", false, e
	}
	if !v.HasWatermark {
		return 0, 0, "", false, nil
	}
	height := func(s *string, name string) (uint64, *rpcError) {
		if s == nil {
			return v.Watermark, nil
		}
		ref, e := blockRefOf(0, *s, false)
		if e != nil {
			return 0, argError(0, "%s %q is not a block number (0x…) or tag", name, clip(*s))
		}
		switch ref.tag {
		case "latest", "pending":
			return v.Watermark, nil
		case "earliest":
			return v.Lowest(), nil
		case "":
		default: // safe, finalized: the node says which height
			if ref.number, e = q.nodeTagHeight(ref.tag); e != nil {
				return 0, e
			}
		}
		if ref.number > v.Watermark {
			return 0, rpcErrorf(rpcServerError, "%s 0x%x is above the indexed head 0x%x (eth_blockNumber): nothing above it is served yet", name, ref.number, v.Watermark)
		}
		if ref.number < v.Lowest() {
			return 0, q.failed(checkHeight(v, name, ref.number))
		}
		return ref.number, nil
	}
	if from, e = height(arg.FromBlock, "fromBlock"); e != nil {
		return 0, 0, "", false, e
	}
	if to, e = height(arg.ToBlock, "toBlock"); e != nil {
		return 0, 0, "", false, e
	}
	if from > to {
		return 0, 0, "", false, argError(0, "fromBlock 0x%x is above toBlock 0x%x", from, to)
	}
	return from, to, "", true, nil
}

// addressesArg reads the filter's address: absent, one, or a list.
func addressesArg(raw json.RawMessage) ([]string, *rpcError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var list []string
	if raw[0] == '[' {
		if json.Unmarshal(raw, &list) != nil {
			return nil, argError(0, "address must be an address or a list of addresses")
		}
	} else {
		var one string
		if json.Unmarshal(raw, &one) != nil {
			return nil, argError(0, "address must be an address or a list of addresses")
		}
		list = []string{one}
	}
	out := make([]string, 0, len(list))
	for _, a := range list {
		h, ok := hexOfLen(a, 20)
		if !ok {
			return nil, argError(0, "address %q is not a 20-byte hex address", clip(a))
		}
		out = append(out, h)
	}
	return out, nil
}

// topicsArg reads the filter's topics: at most four positions.
func topicsArg(positions []json.RawMessage) ([4][]string, *rpcError) {
	var out [4][]string
	if len(positions) > len(out) {
		return out, argError(0, "topics has %d positions; a log has at most 4", len(positions))
	}
	for i, raw := range positions {
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 || string(raw) == "null" {
			continue
		}
		var values []*string
		if raw[0] == '[' {
			if json.Unmarshal(raw, &values) != nil {
				return out, argError(0, "topics[%d] must be null, a topic or a list of topics", i)
			}
		} else {
			var one string
			if json.Unmarshal(raw, &one) != nil {
				return out, argError(0, "topics[%d] must be null, a topic or a list of topics", i)
			}
			values = []*string{&one}
		}
		set := make([]string, 0, len(values))
		for _, v := range values {
			if v == nil { // a null in the list: this position matches any topic
				set = nil
				break
			}
			h, ok := hexOfLen(*v, 32)
			if !ok {
				return out, argError(0, "topics[%d]: %q is not a 32-byte hex topic", i, clip(*v))
			}
			set = append(set, h)
		}
		out[i] = set
	}
	return out, nil
}
