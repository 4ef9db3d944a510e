package rpc

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"go.uber.org/zap"
)

// Which tracers an endpoint has, asked at start (the worker) and on
// `indexer chain add`: `auto` picks the tracer every endpoint that can
// trace has, and refuses a chain whose endpoints disagree (one has only
// the debug tracer, another only trace_block: their answers differ in
// detail, so one chain's frames would depend on which node served them).

// TraceSupport is what one endpoint answered to the probes; Err is set
// when it could not be asked (it answered neither "yes" nor "no").
type TraceSupport struct {
	Endpoint      string
	Debug, Parity bool
	Err           error
}

// ProbeTraces asks the endpoint for a trace of the genesis block with
// each tracer: an answer, or any error but "no such method", says the
// tracer is there (geth refuses to trace the genesis block, and a pruned
// node may lack its state, but both have the method). Cheap: the genesis
// block holds no transactions to replay.
func (e *Ethereum) ProbeTraces(ctx context.Context) TraceSupport {
	s := TraceSupport{Endpoint: e.cfg.EndpointName}
	for _, mode := range []TraceMode{TracesDebug, TracesParity} {
		m, a := e.traceCall(mode, "0x0")
		_, err := e.call(ctx, m, 0, a...)
		var re *RequestError
		isRequest := errors.As(err, &re) && re.HTTPStatus == 0
		switch {
		case err == nil, isRequest && !unsupported(err):
		case isRequest:
			continue // the method is missing
		default:
			s.Err = err
			return s
		}
		if mode == TracesDebug {
			s.Debug = true
		} else {
			s.Parity = true
		}
	}
	return s
}

// ProbeTraces probes every endpoint of the chain, in order.
func (m *Multi) ProbeTraces(ctx context.Context) []TraceSupport {
	out := make([]TraceSupport, 0, len(m.eps))
	for _, ep := range m.eps {
		p, ok := ep.client.(interface {
			ProbeTraces(context.Context) TraceSupport
		})
		if !ok {
			out = append(out, TraceSupport{Endpoint: ep.name, Err: errors.New("the client cannot be probed")})
			continue
		}
		out = append(out, p.ProbeTraces(ctx))
	}
	return out
}

// TraceChoiceError refuses a chain's tracing setting: the endpoints that
// answered lack the tracer asked for, or (auto) disagree.
type TraceChoiceError struct {
	Setting string // off, debug, parity or auto
	Reason  string
}

func (e *TraceChoiceError) Error() string {
	return fmt.Sprintf("traces %s: %s", e.Setting, e.Reason)
}

// ChooseTraces turns a chain's setting (off, debug, parity, auto) and its
// endpoints' probes into the mode to use. debug and parity are taken if
// one endpoint that answered has the tracer (the others are skipped for
// traces); none having it is an error, unless no endpoint answered at all
// (then the setting is taken on trust, and a height's trace will say).
// auto takes debug when every endpoint that can trace has the debug
// tracer, else parity when every one has trace_block, and is an error
// when they disagree; with no endpoint able to trace it is off.
func ChooseTraces(setting string, probes []TraceSupport) (TraceMode, error) {
	answered := 0
	var debug, parity, any []string
	for _, p := range probes {
		if p.Err != nil {
			continue
		}
		answered++
		if p.Debug {
			debug = append(debug, p.Endpoint)
		}
		if p.Parity {
			parity = append(parity, p.Endpoint)
		}
		if p.Debug || p.Parity {
			any = append(any, p.Endpoint)
		}
	}
	switch setting {
	case "", "off":
		return TracesOff, nil
	case string(TracesDebug), string(TracesParity):
		have := debug
		if setting == string(TracesParity) {
			have = parity
		}
		if answered > 0 && len(have) == 0 {
			return TracesOff, &TraceChoiceError{Setting: setting, Reason: fmt.Sprintf("no endpoint has the %s tracer (%s)", setting, DescribeTraceSupport(probes))}
		}
		return TraceMode(setting), nil
	case "auto":
		switch {
		case answered == 0:
			return TracesOff, &TraceChoiceError{Setting: setting, Reason: "no endpoint answered the probes: " + DescribeTraceSupport(probes)}
		case len(any) == 0:
			return TracesOff, nil
		case len(debug) == len(any):
			return TracesDebug, nil
		case len(parity) == len(any):
			return TracesParity, nil
		}
		return TracesOff, &TraceChoiceError{Setting: setting, Reason: "the endpoints disagree: " + DescribeTraceSupport(probes) +
			"; set traces to debug or parity (endpoints without that tracer are skipped for traces)"}
	}
	return TracesOff, &TraceChoiceError{Setting: setting, Reason: "not off, debug, parity or auto"}
}

// DescribeTraceSupport lists what each endpoint has, for errors and logs.
func DescribeTraceSupport(probes []TraceSupport) string {
	parts := make([]string, 0, len(probes))
	for _, p := range probes {
		var has []string
		if p.Debug {
			has = append(has, "debug")
		}
		if p.Parity {
			has = append(has, "parity")
		}
		switch {
		case p.Err != nil:
			parts = append(parts, p.Endpoint+": not answered")
		case len(has) == 0:
			parts = append(parts, p.Endpoint+": none")
		default:
			parts = append(parts, p.Endpoint+": "+strings.Join(has, "+"))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// ResolveTraces probes the chain's endpoints, chooses the mode for the
// setting (ChooseTraces), sets it on every endpoint and marks the
// endpoints that lack that tracer, so that they are skipped for traces
// from the first height on. It logs what it found and chose.
func ResolveTraces(ctx context.Context, m *Multi, setting string, log *zap.Logger) (TraceMode, error) {
	if setting == "" || setting == "off" {
		m.SetTraceMode(TracesOff)
		return TracesOff, nil
	}
	probes := m.ProbeTraces(ctx)
	mode, err := ChooseTraces(setting, probes)
	if err != nil {
		return TracesOff, fmt.Errorf("rpc chain %q: %w", m.chainID, err)
	}
	m.SetTraceMode(mode)
	for i, p := range probes {
		has := p.Debug
		if mode == TracesParity {
			has = p.Parity
		}
		if e, ok := m.eps[i].client.(*Ethereum); ok && mode != TracesOff && p.Err == nil {
			if has {
				e.ableToTrace()
			} else {
				e.unableToTrace(traceMethodOf(mode), errors.New("the probe found no such method"))
			}
		}
	}
	if log != nil {
		log.Info("traces: tracer chosen", zap.String("chain_id", m.chainID), zap.String("setting", setting),
			zap.String("mode", modeName(mode)), zap.String("endpoints", DescribeTraceSupport(probes)))
	}
	return mode, nil
}

// modeName names a mode in logs and errors ("off" for TracesOff).
func modeName(m TraceMode) string {
	if m == TracesOff {
		return "off"
	}
	return string(m)
}
