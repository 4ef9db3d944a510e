package rpc

import (
	"context"
	"fmt"

	"github.com/tideline-dev/tideline/pkg/chain"
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
func (m *Multi) Traces(ctx context.Context, data *chain.BlockData) error {
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
