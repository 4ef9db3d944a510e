package rpc

import (
	"context"
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"
)

// HeadHeight asks every endpoint not cooling down at once and waits for
// their answers, at most HeadTimeout. An endpoint whose head is more than
// MaxHeadSkew above the median of the others' heads is not believed (it is
// logged by name); of the heads believed, the highest is returned. With two
// endpoints that disagree beyond the skew, this is the lower head. When only
// one endpoint answers, its head is returned, unless that endpoint's head
// was not believed the last time it could be compared, less than
// MaxCooldown ago (then the error says so: a *MalformedError among the
// endpoints' errors).
func (m *Multi) HeadHeight(ctx context.Context) (uint64, error) {
	eps := m.order(-1)
	hctx, cancel := context.WithTimeout(ctx, m.opts.HeadTimeout)
	defer cancel()

	type answer struct {
		i    int
		head uint64
		err  error
	}
	ch := make(chan answer, len(eps)) // stragglers never block
	for i, ep := range eps {
		go func() {
			h, err := ep.client.HeadHeight(hctx)
			ch <- answer{i, h, err}
		}()
	}
	done := make([]bool, len(eps))
	errs := make([]error, len(eps))
	var heads []headOf
	take := func(a answer) {
		done[a.i] = true
		if a.err != nil {
			errs[a.i] = a.err
			return
		}
		heads = append(heads, headOf{a.i, eps[a.i], a.head})
	}
wait:
	for pending := len(eps); pending > 0; pending-- {
		select {
		case a := <-ch:
			take(a)
		case <-hctx.Done():
			// Keep the answers that are already in.
			for {
				select {
				case a := <-ch:
					take(a)
				default:
					break wait
				}
			}
		}
	}

	callerGone := ctx.Err() != nil
	for i, ep := range eps {
		switch {
		case !done[i] && callerGone:
			errs[i] = &TransientError{Method: "HeadHeight", Endpoint: ep.name, Err: ctx.Err()}
		case !done[i]:
			errs[i] = &TransientError{Method: "HeadHeight", Endpoint: ep.name, Attempts: 1, Err: &cleanError{
				msg:    fmt.Sprintf("no answer within %v (HeadTimeout)", m.opts.HeadTimeout),
				causes: []error{context.DeadlineExceeded},
			}}
			m.fault(ep, errs[i])
		case callerGone:
			// The caller stopped waiting: no verdict on the endpoint.
		default:
			m.observe(ep, errs[i])
		}
	}
	if len(heads) == 1 && len(eps) > 1 {
		// Nothing to compare with: an endpoint whose head was lately not
		// believed is not believed alone either, or the others' outage
		// would let its phantom head through.
		h := heads[0]
		if since, ok := m.lateLiar(h.ep); ok {
			errs[h.i] = &MalformedError{Method: "HeadHeight", Endpoint: h.ep.name, Field: "result",
				Reason: fmt.Sprintf("head %d not believed alone: %v ago it was more than %d blocks above the other endpoints' heads",
					h.head, since, m.opts.MaxHeadSkew)}
			heads = nil
		}
	}
	if len(heads) == 0 {
		var all []EndpointError
		for i, ep := range eps {
			all = append(all, EndpointError{ep.name, errs[i]})
		}
		return 0, m.allFailed("HeadHeight", all)
	}
	return m.plausibleHead(heads), nil
}

type headOf struct {
	i    int // index in the candidates
	ep   *endpoint
	head uint64
}

// lateLiar reports whether ep's head was not believed the last time it was
// compared, less than MaxCooldown ago, and how long ago.
func (m *Multi) lateLiar(ep *endpoint) (time.Duration, bool) {
	now := m.opts.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	since := now.Sub(ep.disbelievedAt)
	return since, ep.disbelieved && since < m.opts.MaxCooldown
}

// plausibleHead drops heads more than MaxHeadSkew above the median of the
// other endpoints' heads (the upper median for an even count, so that with
// three endpoints one stuck node does not make the other two liars) and
// returns the highest of the rest. The lowest head is never dropped.
func (m *Multi) plausibleHead(heads []headOf) uint64 {
	var best uint64
	others := make([]uint64, 0, len(heads))
	for i, h := range heads {
		believed := true
		var median uint64
		if len(heads) > 1 {
			others = others[:0]
			for j, o := range heads {
				if j != i {
					others = append(others, o.head)
				}
			}
			slices.Sort(others)
			median = others[len(others)/2]
			believed = h.head <= median || h.head-median <= m.opts.MaxHeadSkew
		}
		m.setBelieved(h.ep, believed, h.head, median, len(heads))
		if believed && h.head > best {
			best = h.head
		}
	}
	return best
}

// setBelieved logs when an endpoint's head starts or stops being
// disbelieved (not at every call: HeadHeight is polled).
func (m *Multi) setBelieved(ep *endpoint, believed bool, head, median uint64, answers int) {
	now := m.opts.Now()
	m.mu.Lock()
	changed := ep.disbelieved == believed
	ep.disbelieved = !believed
	if !believed {
		ep.disbelievedAt = now
	}
	m.mu.Unlock()
	switch {
	case !changed:
	case !believed:
		msg := "rpc endpoint reports a head far above the other endpoints'; ignoring its head"
		if answers == 2 {
			msg = "rpc endpoints disagree on the head beyond MaxHeadSkew; taking the lower head"
		}
		m.log.Warn(msg, zap.String("endpoint", ep.name), zap.Uint64("head", head),
			zap.Uint64("others_median", median), zap.Uint64("max_head_skew", m.opts.MaxHeadSkew))
	default:
		m.log.Info("rpc endpoint's head is believed again", zap.String("endpoint", ep.name), zap.Uint64("head", head))
	}
}
