package config

import (
	"fmt"
	"reflect"
	"time"
)

// Traces is a chain's call traces: which tracer of the node gives every
// transaction's call frames (pkg/rpc, traces.go), the limits of the
// requests that carry them, and the backfill of heights indexed without
// them. `traces: debug` is short for `traces: {mode: debug}`.
type Traces struct {
	// Mode is off, debug (debug_traceBlockByNumber with the callTracer:
	// geth, reth, anvil), parity (trace_block: erigon, nethermind, reth,
	// anvil) or auto (the endpoints are probed at start and on `indexer
	// chain add`; the chosen tracer is logged, endpoints that disagree
	// are refused). With tracing on, a height is indexed only with its
	// traces.
	Mode string `mapstructure:"mode"`
	// Batch is how many heights one request carrying traces asks for.
	Batch int `mapstructure:"batch"`
	// Concurrency caps the requests carrying traces in flight per range
	// activity.
	Concurrency int `mapstructure:"concurrency"`
	// Timeout is the time one attempt of a request carrying traces may
	// take (also given to the node's tracer); a request of several
	// heights that times out is split to isolate the slow one.
	Timeout time.Duration `mapstructure:"timeout"`
	// MaxResponseBytes caps an answer carrying traces.
	MaxResponseBytes int64 `mapstructure:"max_response_bytes"`
	// Backfill fills the traces of heights indexed without them.
	Backfill TraceBackfill `mapstructure:"backfill"`
}

// TraceBackfill tunes the traces backfill: a TraceBackfill workflow run
// by a Temporal Schedule while tracing is on, walking the indexed heights
// newest first.
type TraceBackfill struct {
	// HeightsPerSecond caps the heights it traces per second (per
	// worker process), sparing the node's tracer.
	HeightsPerSecond float64 `mapstructure:"heights_per_second"`
	// Batch is how many heights it traces and writes at a time.
	Batch int `mapstructure:"batch"`
	// Interval is how often its Schedule starts it (a run goes on for a
	// few minutes, then the next run resumes where it stopped).
	Interval time.Duration `mapstructure:"interval"`
}

// Trace modes of the traces setting.
const (
	TracesOff    = "off"
	TracesDebug  = "debug"
	TracesParity = "parity"
	TracesAuto   = "auto"
)

// Enabled tells whether the chain is indexed with traces (auto included,
// until its probe finds no tracer).
func (t Traces) Enabled() bool { return t.Mode != TracesOff && t.Mode != "" }

func defaultTraces() Traces {
	return Traces{
		Mode: TracesOff, Batch: 10, Concurrency: 2, Timeout: time.Minute, MaxResponseBytes: 1 << 30,
		Backfill: TraceBackfill{HeightsPerSecond: 50, Batch: 200, Interval: time.Minute},
	}
}

// tracesShorthand lets `traces: debug` stand for `traces: {mode: debug}`
// (and `traces: false`, YAML's reading of a bare off, for off).
func tracesShorthand(from, to reflect.Type, data any) (any, error) {
	if to != reflect.TypeOf(Traces{}) {
		return data, nil
	}
	switch v := data.(type) {
	case string:
		return map[string]any{"mode": v}, nil
	case bool:
		if v {
			return nil, fmt.Errorf("traces: true is not a mode; say debug, parity or auto")
		}
		return map[string]any{"mode": TracesOff}, nil
	}
	return data, nil
}

// validate checks the traces section.
func (t Traces) validate(bad func(key, format string, args ...any)) {
	switch t.Mode {
	case TracesOff, TracesDebug, TracesParity, TracesAuto:
	default:
		bad(".traces.mode", "%q is not off, debug, parity or auto", t.Mode)
	}
	if t.Batch < 1 {
		bad(".traces.batch", "must be at least 1")
	}
	if t.Concurrency < 1 {
		bad(".traces.concurrency", "must be at least 1")
	}
	if t.Timeout < time.Second {
		bad(".traces.timeout", "must be at least 1s (a block's trace takes the node seconds)")
	}
	if t.MaxResponseBytes < 1<<20 {
		bad(".traces.max_response_bytes", "must be at least 1 MiB (%d)", 1<<20)
	}
	if t.Backfill.HeightsPerSecond <= 0 {
		bad(".traces.backfill.heights_per_second", "must be positive")
	}
	if t.Backfill.Batch < 1 {
		bad(".traces.backfill.batch", "must be at least 1")
	}
	if t.Backfill.Interval < time.Second {
		bad(".traces.backfill.interval", "must be at least 1s")
	}
}
