package worker

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/rpc"
)

// A chain's traces setting in the worker: the endpoint clients get the
// limits of the requests that carry traces and the configured tracer
// (auto starts off), then ResolveTraces probes the endpoints and sets the
// tracer every height will be fetched with.

// traceConfig is the rpc side of the chain's traces setting.
func traceConfig(ch config.Chain) rpc.TraceConfig {
	t := ch.Traces
	c := rpc.TraceConfig{Batch: t.Batch, Concurrency: t.Concurrency, Timeout: t.Timeout, MaxResponseBytes: t.MaxResponseBytes}
	switch t.Mode {
	case config.TracesDebug:
		c.Mode = rpc.TracesDebug
	case config.TracesParity:
		c.Mode = rpc.TracesParity
	}
	return c
}

// ResolveTraces probes the chain's endpoints for their tracers when the
// chain traces and sets the tracer on its client (rpc.ResolveTraces): it
// tells whether the chain is indexed with traces. A setting the endpoints
// cannot serve (no endpoint has the tracer asked for; auto with endpoints
// that disagree) is an error naming the key.
func ResolveTraces(ctx context.Context, chainID string, client rpc.Client, ch config.Chain, log *zap.Logger) (bool, error) {
	if !ch.Traces.Enabled() {
		return false, nil
	}
	m, ok := client.(*rpc.Multi)
	if !ok {
		return false, fmt.Errorf("chains.%s: the chain's client cannot be probed for traces", chainID)
	}
	mode, err := rpc.ResolveTraces(ctx, m, ch.Traces.Mode, log)
	if err != nil {
		return false, &config.KeyError{Key: "chains." + chainID + ".traces.mode", Reason: err.Error()}
	}
	if mode == rpc.TracesOff {
		log.Warn("traces auto: no endpoint can trace; the chain is indexed without traces", zap.String("chain_id", chainID))
	}
	return mode != rpc.TracesOff, nil
}
