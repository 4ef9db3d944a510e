package simchain

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Config describes the simulated chain and how its node misbehaves. Start
// from DefaultConfig and change what a test or benchmark is about: the zero
// value is not usable (a zero block time has no head).
type Config struct {
	// ChainID is answered by eth_chainId and net_version and signs the
	// EIP-155 transactions.
	ChainID uint64
	// Seed determines every block: the same seed gives the same bytes.
	Seed uint64
	// Length is the head height at start; blocks 0..Length exist at once.
	Length uint64
	// BlockTime is the time between blocks: the head grows by one every
	// BlockTime, and block h is (head-h)·BlockTime older than the head.
	BlockTime time.Duration
	// TxsPerBlock is the number of transactions in every block (0: empty
	// blocks).
	TxsPerBlock int
	// LogsPerTx is the average number of logs per transaction: each
	// transaction draws 0..round(2·LogsPerTx) logs uniformly.
	LogsPerTx float64
	// CallsPerTx is the average number of inner call frames of a
	// transaction that calls or creates a contract (plain transfers have
	// none; every log emitter is called, so a transaction has at least
	// one per emitter): traces.go.
	CallsPerTx float64
	// TraceLatency is added to a request once per trace call it holds
	// (debug_traceBlockByNumber, trace_block): tracing costs a node time
	// per block. NoDebugTracer and NoParityTracer make the node lack the
	// method (-32601), as a node without the debug or trace API does.
	TraceLatency   time.Duration
	NoDebugTracer  bool
	NoParityTracer bool

	// Latency is added to every HTTP request (a batch counts once) and to
	// every websocket call.
	Latency time.Duration
	// Fault rates are per HTTP request, in [0, 1], drawn in that order:
	// TimeoutRate holds the request without an answer (until the client
	// gives up, TimeoutHold passes or the chain closes), TooManyRequestsRate
	// answers HTTP 429 and ServerErrorRate HTTP 500, 502 or 503.
	TimeoutRate         float64
	TooManyRequestsRate float64
	ServerErrorRate     float64
	// MalformedRate is per call (each element of a batch draws): the answer
	// is valid JSON but breaks a check of the caller's decoder (a block
	// hash one byte short, a quantity that is not hex).
	MalformedRate float64
	// TimeoutHold bounds how long a timed-out request is held before the
	// chain answers HTTP 504.
	TimeoutHold time.Duration

	// MaxBatchCalls refuses larger JSON-RPC batches (error -32600), as
	// nodes do; MaxResponseBytes answers the calls of a batch past that size
	// with error -32003 ("response too large"), as geth does.
	MaxBatchCalls    int
	MaxResponseBytes int
	// MaxRequestBytes bounds a request body (HTTP 413 past it).
	MaxRequestBytes int64

	// Addr is the listen address; the default picks a free port on
	// 127.0.0.1.
	Addr string
	// Now is the clock (time.Now if nil). Tests inject a fake one to move
	// the head without sleeping.
	Now func() time.Time
}

// DefaultConfig is the default mix of issue 8: 2 s blocks, 20 transactions
// per block, 2 logs per transaction on average, 1,000 blocks, no faults;
// 3 inner call frames per contract transaction (issue 20).
func DefaultConfig() Config {
	return Config{
		ChainID:          1_337_042,
		Seed:             1,
		Length:           1000,
		BlockTime:        2 * time.Second,
		TxsPerBlock:      20,
		LogsPerTx:        2,
		CallsPerTx:       3,
		TimeoutHold:      60 * time.Second,
		MaxBatchCalls:    1000,
		MaxResponseBytes: 64 << 20,
		MaxRequestBytes:  16 << 20,
		Addr:             "127.0.0.1:0",
	}
}

// maxTxsPerBlock keeps a transaction's index within the 24 bits its hash
// encodes (see ids.go).
const maxTxsPerBlock = 1 << 20

func (c *Config) validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("simchain: Config.%s: %s", field, fmt.Sprintf(format, args...)))
	}
	if c.BlockTime <= 0 {
		bad("BlockTime", "%v is not positive", c.BlockTime)
	}
	if c.TxsPerBlock < 0 || c.TxsPerBlock > maxTxsPerBlock {
		bad("TxsPerBlock", "%d is outside 0..%d", c.TxsPerBlock, maxTxsPerBlock)
	}
	if c.LogsPerTx < 0 || c.LogsPerTx > 1000 {
		bad("LogsPerTx", "%v is outside 0..1000", c.LogsPerTx)
	}
	if c.Length >= maxHeight {
		bad("Length", "%d is too high (max %d)", c.Length, uint64(maxHeight-1))
	} else if c.BlockTime > 0 && c.Length > uint64(math.MaxInt64/int64(c.BlockTime))/2 {
		// Timestamps are computed in nanoseconds.
		bad("Length", "%d blocks of %v do not fit in time", c.Length, c.BlockTime)
	}
	if c.Latency < 0 {
		bad("Latency", "%v is negative", c.Latency)
	}
	if c.CallsPerTx < 0 || c.CallsPerTx > 100 {
		bad("CallsPerTx", "%v is outside 0..100", c.CallsPerTx)
	}
	if c.TraceLatency < 0 {
		bad("TraceLatency", "%v is negative", c.TraceLatency)
	}
	for name, r := range map[string]float64{
		"TimeoutRate": c.TimeoutRate, "TooManyRequestsRate": c.TooManyRequestsRate,
		"ServerErrorRate": c.ServerErrorRate, "MalformedRate": c.MalformedRate,
	} {
		if r < 0 || r > 1 {
			bad(name, "%v is outside [0, 1]", r)
		}
	}
	if sum := c.TimeoutRate + c.TooManyRequestsRate + c.ServerErrorRate; sum > 1 {
		bad("TimeoutRate", "the three request fault rates add up to %v, more than 1", sum)
	}
	if c.TimeoutRate > 0 && c.TimeoutHold <= 0 {
		bad("TimeoutHold", "must be positive when TimeoutRate is set")
	}
	if c.MaxBatchCalls <= 0 {
		bad("MaxBatchCalls", "%d is not positive", c.MaxBatchCalls)
	}
	if c.MaxResponseBytes <= 0 {
		bad("MaxResponseBytes", "%d is not positive", c.MaxResponseBytes)
	}
	if c.MaxRequestBytes <= 0 {
		bad("MaxRequestBytes", "%d is not positive", c.MaxRequestBytes)
	}
	if c.Addr == "" {
		bad("Addr", "empty")
	}
	return errors.Join(errs...)
}
