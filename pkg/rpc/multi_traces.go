package rpc

import (
	"context"
	"fmt"

	"github.com/tideline-dev/tideline/pkg/chaindata"
)

// Traces across endpoints (traces.go): the endpoints that cannot trace
// are skipped for traces only, and a trace fails over like a block does.

// traceCapable is an endpoint client that may say it cannot trace.
type traceCapable interface {
	Tracer
	CanTrace() bool
}

// TraceMode is the chain's tracing: its endpoints' mode (they share
// one), TracesOff when none traces.
func (m *Multi) TraceMode() TraceMode {
	for _, ep := range m.eps {
		if t, ok := ep.client.(Tracer); ok {
			if mode := t.TraceMode(); mode != TracesOff {
				return mode
			}
		}
	}
	return TracesOff
}

// canTrace tells whether ep may be asked for traces: its client traces
// and has not said it cannot.
func canTrace(ep *endpoint) bool {
	t, ok := ep.client.(traceCapable)
	return ok && t.TraceMode() != TracesOff && t.CanTrace()
}

// fetchOrder is the order in which FetchBlocks asks the endpoints: with
// tracing on, those that cannot trace are left out (all of them if none
// can, so that the heights fail with the endpoints' own errors).
func (m *Multi) fetchOrder(prefer int) []*endpoint {
	eps := m.order(prefer)
	if m.TraceMode() == TracesOff {
		return eps
	}
	able := make([]*endpoint, 0, len(eps))
	for _, ep := range eps {
		if canTrace(ep) {
			able = append(able, ep)
		}
	}
	if len(able) == 0 {
		return eps
	}
	return able
}

// Traces asks the endpoints that can trace, the one that served the block
// first, as Receipts does: each checks the answer against the block.
func (m *Multi) Traces(ctx context.Context, data *chaindata.BlockData) error {
	if m.TraceMode() == TracesOff {
		return fmt.Errorf("rpc chain %q: traces asked, but tracing is off", m.chainID)
	}
	eps := m.fetchOrder(m.sourceOf(data.Block.Hash))
	var errs []EndpointError
	for _, ep := range eps {
		t, ok := ep.client.(Tracer)
		if !ok {
			continue
		}
		err := t.Traces(ctx, data)
		if err == nil {
			m.observe(ep, nil)
			return nil
		}
		if ctx.Err() != nil {
			return err
		}
		m.observe(ep, err)
		errs = append(errs, EndpointError{ep.name, err})
	}
	if len(errs) == 0 {
		return fmt.Errorf("rpc chain %q: no endpoint can trace", m.chainID)
	}
	return m.allFailed("Traces", errs)
}

// SetTraceMode sets every endpoint's tracing (ResolveTraces).
func (m *Multi) SetTraceMode(mode TraceMode) {
	for _, ep := range m.eps {
		if s, ok := ep.client.(interface{ SetTraceMode(TraceMode) }); ok {
			s.SetTraceMode(mode)
		}
	}
}

// FetchTraces asks the endpoints that can trace for the traces of blocks
// already known (Ethereum.FetchTraces), each block's failures on one
// endpoint asked again of the next, as FetchBlocks does.
func (m *Multi) FetchTraces(ctx context.Context, blocks []*chaindata.BlockData) []error {
	out := make([]BlockResult, len(blocks))
	for i, d := range blocks {
		out[i].Height = d.Block.Number
	}
	m.fetchEach(ctx, "FetchTraces", out, func(c Client, pending []int) []BlockResult {
		bs := make([]*chaindata.BlockData, len(pending))
		for k, i := range pending {
			bs[k] = blocks[i]
		}
		errs := FetchTraces(ctx, c, bs)
		rs := make([]BlockResult, len(pending))
		for k, i := range pending {
			rs[k] = BlockResult{Height: blocks[i].Block.Number, Err: errs[k]}
			if errs[k] == nil {
				rs[k].Data = blocks[i]
			}
		}
		return rs
	})
	errs := make([]error, len(out))
	for i, r := range out {
		errs[i] = r.Err
	}
	return errs
}

// TraceFetcher is a client that reads the traces of known blocks in
// batches.
type TraceFetcher interface {
	FetchTraces(ctx context.Context, blocks []*chaindata.BlockData) []error
}

var (
	_ TraceFetcher = (*Ethereum)(nil)
	_ TraceFetcher = (*Multi)(nil)
)

// FetchTraces reads the traces of blocks already known (their hash and
// transactions set) with c's batch method if it has one, else one block
// at a time with Traces. The error of each block is at its index.
func FetchTraces(ctx context.Context, c Client, blocks []*chaindata.BlockData) []error {
	if f, ok := c.(TraceFetcher); ok {
		return f.FetchTraces(ctx, blocks)
	}
	errs := make([]error, len(blocks))
	t, ok := c.(Tracer)
	for i, d := range blocks {
		if !ok || t.TraceMode() == TracesOff {
			errs[i] = fmt.Errorf("block %d: the client does not trace", d.Block.Number)
			continue
		}
		errs[i] = t.Traces(ctx, d)
	}
	return errs
}
