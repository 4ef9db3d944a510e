package api

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/tideline-dev/tideline/pkg/chaindata"
)

// The debug_ trace methods with the callTracer, rebuilt from the stored
// call frames (a chain indexed with traces): debug_traceTransaction,
// debug_traceBlockByNumber and debug_traceBlockByHash, in geth's
// callTracer form. Any other tracer re-executes the transaction, which
// only the node can: such a call goes to the node when
// api.rpc_node_methods lists the method, and is refused otherwise.

// traceOptions is the tracer object of a debug_trace* call.
type traceOptions struct {
	Tracer       string `json:"tracer"`
	TracerConfig struct {
		OnlyTopCall bool `json:"onlyTopCall"`
		WithLog     bool `json:"withLog"`
	} `json:"tracerConfig"`
}

// fromIndex tells whether the options ask for what the index holds: the
// callTracer's whole tree, without logs.
func (q *rpcReq) traceFromIndex(method string, p rpcParams, at int) (opts traceOptions, index bool, e *rpcError) {
	if p.given(at) {
		raw := bytes.TrimSpace(p[at])
		if raw[0] != '{' || json.Unmarshal(raw, &opts) != nil {
			return opts, false, argError(at, "want a tracer object ({\"tracer\": \"callTracer\"})")
		}
	}
	if opts.Tracer == "callTracer" && !opts.TracerConfig.WithLog {
		return opts, true, nil
	}
	if q.s.forward != nil && q.s.nodeMethods[method] {
		return opts, false, nil
	}
	return opts, false, argError(at, "only the callTracer without logs is served here (from the stored call traces); other tracers re-execute, which this API leaves to the node")
}

// callFrame is one frame of geth's callTracer.
type callFrame struct {
	Type  string `json:"type"`
	From  string `json:"from,omitempty"`
	To    string `json:"to,omitempty"`
	Value string `json:"value,omitempty"`
	// Empty only for a bare SELFDESTRUCT frame (bareSelfDestruct): every
	// other frame has them ("0x0", "0x").
	Gas          string       `json:"gas,omitempty"`
	GasUsed      string       `json:"gasUsed,omitempty"`
	Input        string       `json:"input,omitempty"`
	Output       string       `json:"output,omitempty"`
	Error        string       `json:"error,omitempty"`
	RevertReason string       `json:"revertReason,omitempty"`
	Calls        []*callFrame `json:"calls,omitempty"`
}

// callTree rebuilds a transaction's tree from its frames (depth first);
// onlyTop keeps the top-level call alone.
func callTree(fs []chaindata.Trace, onlyTop bool) (*callFrame, error) {
	var root *callFrame
	var stack []*callFrame // stack[d] is the open frame at depth d
	for _, f := range fs {
		c := &callFrame{Type: strings.ToUpper(string(f.Type)), From: f.From, To: f.To,
			Gas: quantity(f.Gas), GasUsed: quantity(f.GasUsed), Input: orEmptyHex(f.Input),
			Error: f.Error, RevertReason: f.RevertReason}
		if f.Output != "0x" {
			c.Output = f.Output
		}
		if bareSelfDestruct(f) {
			// As the node sent it: the type alone, nothing made up
			// (an address of "" fails clients' parsing).
			c = &callFrame{Type: c.Type}
		} else if f.Type != chaindata.TraceStaticCall {
			v, err := bigQuantity(orZero(f.Value))
			if err != nil {
				return nil, err
			}
			c.Value = v
		}
		d := f.Depth()
		if d == 0 {
			root, stack = c, []*callFrame{c}
			continue
		}
		if onlyTop {
			continue
		}
		if d > len(stack) || root == nil {
			return nil, errFrameOrder(f)
		}
		stack = stack[:d]
		stack[d-1].Calls = append(stack[d-1].Calls, c)
		stack = append(stack, c)
	}
	if root == nil {
		return nil, errFrameOrder(chaindata.Trace{})
	}
	return root, nil
}

type frameOrderError struct{ tx string }

func (e *frameOrderError) Error() string {
	return "stored frames of " + e.tx + " do not form a tree (depth first from the top-level call)"
}

func errFrameOrder(f chaindata.Trace) error { return &frameOrderError{tx: f.TxHash} }

func (q *rpcReq) debugTraceTransaction(p rpcParams) (json.RawMessage, *rpcError) {
	if e := p.want(1, 2); e != nil {
		return nil, e
	}
	opts, index, e := q.traceFromIndex("debug_traceTransaction", p, 1)
	if e != nil {
		return nil, e
	}
	if !index {
		return q.forward("debug_traceTransaction", p)
	}
	_, fs, e := q.frames(p[:1])
	if e != nil {
		return nil, e
	}
	tree, err := callTree(fs, opts.TracerConfig.OnlyTopCall)
	if _, e := q.encoded(nil, err); e != nil {
		return nil, e
	}
	return result(tree), nil
}

type txTraceResult struct {
	TxHash string     `json:"txHash"`
	Result *callFrame `json:"result"`
}

func (q *rpcReq) debugTraceBlock(p rpcParams, byHash bool) (json.RawMessage, *rpcError) {
	method := "debug_traceBlockByNumber"
	if byHash {
		method = "debug_traceBlockByHash"
	}
	if e := p.want(1, 2); e != nil {
		return nil, e
	}
	opts, index, e := q.traceFromIndex(method, p, 1)
	if e != nil {
		return nil, e
	}
	if !index {
		return q.forward(method, p)
	}
	b, found, e := q.blockArg(p, byHash)
	if e != nil {
		return nil, e
	}
	if !found {
		return nil, rpcErrorf(rpcServerError, "block not found")
	}
	txs, frames, e := q.blockFrames(b)
	if e != nil {
		return nil, e
	}
	out := make([]txTraceResult, 0, len(txs))
	for i, tx := range txs {
		tree, err := callTree(frames[i], opts.TracerConfig.OnlyTopCall)
		if _, e := q.encoded(nil, err); e != nil {
			return nil, e
		}
		out = append(out, txTraceResult{TxHash: tx.Hash, Result: tree})
	}
	return result(out), nil
}

// blockFrames reads a traced block's transactions and each one's frames
// (those of the block's own rows: a reorganisation may be rewriting it),
// the frames in one read of the height.
func (q *rpcReq) blockFrames(b chaindata.Block) ([]chaindata.Transaction, [][]chaindata.Trace, *rpcError) {
	if ae := q.traced(b.Number); ae != nil {
		return nil, nil, q.failed(ae)
	}
	txs, err := q.ownTransactions(b)
	if err != nil {
		return nil, nil, q.storeFailed(err)
	}
	fs, err := q.s.store.Traces.BlockTraces(q.r.Context(), q.id, b.Number)
	if err != nil {
		return nil, nil, q.storeFailed(err)
	}
	at := make(map[uint32]int, len(txs)) // a transaction's index in the block → in txs
	for i, tx := range txs {
		at[tx.Index] = i
	}
	frames := make([][]chaindata.Trace, len(txs))
	for _, f := range fs {
		i, ok := at[f.TxIndex]
		if ok && f.TxHash == txs[i].Hash && f.BlockHash == txs[i].BlockHash {
			frames[i] = append(frames[i], f)
		}
	}
	return txs, frames, nil
}

func (q *rpcReq) debugTraceBlockByNumber(p rpcParams) (json.RawMessage, *rpcError) {
	return q.debugTraceBlock(p, false)
}
func (q *rpcReq) debugTraceBlockByHash(p rpcParams) (json.RawMessage, *rpcError) {
	return q.debugTraceBlock(p, true)
}

// bareSelfDestruct tells a SELFDESTRUCT frame an older geth tracer sent as
// its type alone ({"type":"SELFDESTRUCT"}, 2016-era clients; pkg/rpc keeps
// it, counted as incomplete): no contract, no beneficiary, so its value
// (stored as 0) is not known either.
func bareSelfDestruct(f chaindata.Trace) bool {
	return f.Type == chaindata.TraceSelfDestruct && f.From == "" && f.To == ""
}
