package rpc

import (
	"context"
	"errors"

	"go.uber.org/zap"
)

// FetchBlocks asks the preferred endpoint for all heights, then each
// further endpoint, in order of preference, for the heights still failing
// (a lagging node answers ErrBlockNotFound for new heights, another may
// have them; a malformed answer may be one node's fault). A height that
// fails everywhere has an *AllFailedError, or with one endpoint that
// endpoint's error, as BlockByHeight. Endpoints are observed as by the
// single-height calls: an answer for any height ends a cooldown, a
// transport failure of every height starts one.
func (m *Multi) FetchBlocks(ctx context.Context, heights []uint64) []BlockResult {
	out := make([]BlockResult, len(heights))
	for i, h := range heights {
		out[i].Height = h
	}
	m.fetchEach(ctx, "FetchBlocks", out, func(c Client, pending []int) []BlockResult {
		hs := make([]uint64, len(pending))
		for k, i := range pending {
			hs[k] = heights[i]
		}
		return FetchBlocks(ctx, c, hs)
	})
	return out
}

// fetchEach fills out, asking each endpoint in turn (fetchOrder) for the
// results still failing: ask(client, pending) answers for out's indexes
// pending, in that order.
func (m *Multi) fetchEach(ctx context.Context, method string, out []BlockResult, ask func(c Client, pending []int) []BlockResult) {
	pending := make([]int, len(out))
	for i := range out {
		pending[i] = i
	}
	errs := make([][]EndpointError, len(out))
	eps := m.fetchOrder(-1)
	for n, ep := range eps {
		if len(pending) == 0 {
			break
		}
		rs := ask(ep.client, pending)
		var next []int
		answered := false
		var fault error
		for k, r := range rs {
			i := pending[k]
			switch {
			case r.Err == nil:
				out[i].Data, out[i].Err = r.Data, nil
				m.remember(r.Data.Block.Hash, ep.idx)
				answered = true
				continue
			case errors.Is(r.Err, ErrBlockNotFound):
				answered = true
			case fault == nil && endpointFault(r.Err):
				fault = r.Err
			}
			errs[i] = append(errs[i], EndpointError{ep.name, r.Err})
			next = append(next, i)
		}
		if ctx.Err() != nil {
			// The caller gave up: neither the endpoint's fault nor a reason
			// to ask another one.
			for _, i := range next {
				out[i].Err = errs[i][len(errs[i])-1].Err
			}
			return
		}
		switch {
		case answered:
			m.observe(ep, nil)
		case fault != nil:
			m.observe(ep, fault)
		}
		if len(next) > 0 && n+1 < len(eps) {
			m.log.Debug("rpc heights failed; trying the next endpoint", zap.String("method", method), zap.Int("heights", len(next)),
				zap.Uint64("first", out[next[0]].Height), zap.String("endpoint", ep.name),
				zap.String("next", eps[n+1].name), zap.Error(errs[next[0]][len(errs[next[0]])-1].Err))
		}
		pending = next
	}
	for _, i := range pending {
		out[i].Err = m.allFailed(method, errs[i])
	}
}
