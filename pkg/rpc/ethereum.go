package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	gethrpc "github.com/ethereum/go-ethereum/rpc"
	"go.uber.org/zap"
	"golang.org/x/sync/singleflight"
	"golang.org/x/time/rate"

	"github.com/tideline-dev/tideline/pkg/chaindata"
)

// EthereumConfig configures one Ethereum JSON-RPC endpoint.
type EthereumConfig struct {
	ChainID string
	// EndpointName names the endpoint in errors, logs and metric labels.
	// Required: the URL itself is never shown because it often embeds an
	// API key.
	EndpointName string
	URL          string        // http(s):// or ws(s)://
	Timeout      time.Duration // per attempt; default 10s
	MaxAttempts  int           // per request, first try included; default 5
	// Retries wait BackoffInitial·2^(n-1), capped at BackoffMax, with full
	// jitter so that many workers do not retry in step. Defaults 250ms, 10s.
	BackoffInitial time.Duration
	BackoffMax     time.Duration
	RateLimit      float64 // requests per second over all methods; 0 = unlimited
	Burst          int     // default: RateLimit rounded up, at least 1
	// FetchBatch is how many heights one FetchBlocks request asks for
	// (each height two calls: its block and its receipts). Default 50.
	FetchBatch int
	// FetchConcurrency caps the FetchBlocks requests in flight at once, per
	// call. Default 4.
	FetchConcurrency int
	// ReceiptsBatch caps the calls of one batch of the per-transaction
	// receipts fallback (a node without eth_getBlockReceipts); providers
	// reject large batches. Default 100.
	ReceiptsBatch int
	// MaxResponseBytes caps one answer: a node (or a proxy in front of it)
	// that streams an endless or absurd body is refused with a malformed
	// error instead of exhausting memory. Default 256 MiB, far above any
	// real block with receipts.
	MaxResponseBytes int64
	// ExpectedChainID is the id eth_chainId must answer; 0 checks nothing.
	// See chain_check.go.
	ExpectedChainID uint64
	// ChainRecheck is how long a good eth_chainId answer is trusted;
	// default one minute.
	ChainRecheck time.Duration
	// Traces is how the endpoint is asked for call traces, with the
	// limits of the requests that carry them (traces.go); the zero value
	// asks for none.
	Traces TraceConfig
	// HeadPoll is how often SubscribeHeads asks an http(s) endpoint for
	// its head (heads_poll.go); default 1s. Websockets are not polled.
	HeadPoll time.Duration
}

func (c *EthereumConfig) setDefaults() {
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Second
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = 5
	}
	if c.BackoffInitial <= 0 {
		c.BackoffInitial = 250 * time.Millisecond
	}
	if c.BackoffMax <= 0 {
		c.BackoffMax = 10 * time.Second
	}
	if c.BackoffMax < c.BackoffInitial {
		c.BackoffMax = c.BackoffInitial
	}
	if c.RateLimit > 0 && c.Burst <= 0 {
		c.Burst = max(1, int(c.RateLimit+0.999))
	}
	if c.FetchBatch <= 0 {
		c.FetchBatch = 50
	}
	if c.FetchConcurrency <= 0 {
		c.FetchConcurrency = 4
	}
	if c.ReceiptsBatch <= 0 {
		c.ReceiptsBatch = 100
	}
	if c.MaxResponseBytes <= 0 {
		c.MaxResponseBytes = 256 << 20
	}
	if c.HeadPoll <= 0 {
		c.HeadPoll = time.Second
	}
	if c.ChainRecheck <= 0 {
		c.ChainRecheck = time.Minute
	}
	c.Traces.setDefaults()
}

// Ethereum is the Client for Ethereum JSON-RPC nodes. It is safe for
// concurrent use.
type Ethereum struct {
	cfg     EthereumConfig
	client  *gethrpc.Client
	limiter *rate.Limiter // nil: unlimited
	log     *zap.Logger
	metrics *Metrics
	redact  *redactor

	// noBlockReceipts is set once the node has said it lacks
	// eth_getBlockReceipts, so that later blocks go straight to the
	// per-transaction fallback instead of paying a failed call each.
	noBlockReceipts atomic.Bool

	// httpClient is the HTTP client of an http(s) endpoint (nil for
	// websockets): FetchBlocks posts its batches itself (batch_http.go).
	// traceHTTP is the same with the traces' answer size limit.
	httpClient, traceHTTP *http.Client
	// traces is the endpoint's tracing: its mode and whether it was
	// found unable to trace (traces.go).
	traces traceState
	// batchAnswer is the size of the last batch answer read without a
	// Content-Length: the next one is read into a buffer that size.
	batchAnswer atomic.Int64

	// chain is the last eth_chainId check (nil: check before the next
	// request); chainCheck makes concurrent requests share one.
	chain      atomic.Pointer[chainState]
	chainCheck singleflight.Group
	clock      func() time.Time // nil: time.Now; tests set it

	// polled is the highest height a polled head subscription has sent
	// (0 with none sent yet, see heads_poll.go): a subscription renewed
	// after a failure or a silence goes on above it instead of sending the
	// same head again.
	polled atomic.Uint64
}

var _ Client = (*Ethereum)(nil)

// NewEthereum connects to cfg.URL (for websockets the connection is made
// now, bounded by ctx). logger and m may be nil.
func NewEthereum(ctx context.Context, cfg EthereumConfig, logger *zap.Logger, m *Metrics) (*Ethereum, error) {
	if cfg.EndpointName == "" {
		return nil, errors.New("rpc: EthereumConfig.EndpointName is required (the URL is never shown)")
	}
	if cfg.URL == "" {
		return nil, fmt.Errorf("rpc endpoint %q: URL is empty", cfg.EndpointName)
	}
	cfg.setDefaults()
	if logger == nil {
		logger = zap.NewNop()
	}
	e := &Ethereum{
		cfg:     cfg,
		log:     logger.With(zap.String("chain_id", cfg.ChainID), zap.String("endpoint", cfg.EndpointName)),
		metrics: m,
		redact:  newRedactor(cfg.URL),
	}
	if cfg.RateLimit > 0 {
		e.limiter = rate.NewLimiter(rate.Limit(cfg.RateLimit), cfg.Burst)
	}
	var opts []gethrpc.ClientOption
	if strings.HasPrefix(cfg.URL, "http://") || strings.HasPrefix(cfg.URL, "https://") {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		// Workers fetch in parallel from one endpoint; the default of 2
		// idle connections per host would churn TCP/TLS handshakes.
		tr.MaxIdleConnsPerHost = 64
		e.httpClient = &http.Client{Transport: limitedTransport{tr, cfg.MaxResponseBytes}}
		e.traceHTTP = &http.Client{Transport: limitedTransport{tr, cfg.Traces.MaxResponseBytes}}
		opts = append(opts, gethrpc.WithHTTPClient(e.httpClient))
	} else {
		opts = append(opts, gethrpc.WithWebsocketMessageSizeLimit(max(cfg.MaxResponseBytes, cfg.Traces.MaxResponseBytes)))
	}
	e.traces.mode.Store(string(cfg.Traces.Mode))
	c, err := gethrpc.DialOptions(ctx, cfg.URL, opts...)
	if err != nil {
		return nil, &RequestError{Method: "dial", Endpoint: cfg.EndpointName, Err: e.clean(err)}
	}
	e.client = c
	return e, nil
}

// Close releases connections.
func (e *Ethereum) Close() { e.client.Close() }

// HeadHeight returns the node's eth_blockNumber.
func (e *Ethereum) HeadHeight(ctx context.Context) (uint64, error) {
	const method = "eth_blockNumber"
	raw, err := e.callChecked(ctx, method, 0)
	if err != nil {
		return 0, err
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return 0, e.fail(method, decoder{method: method, endpoint: e.cfg.EndpointName}.malformed("result", "expected a hex string, got %s", snippet(raw)))
	}
	h, err := parseQuantity(s)
	if err != nil {
		return 0, e.fail(method, decoder{method: method, endpoint: e.cfg.EndpointName}.malformed("result", "%v", err))
	}
	return h, nil
}

// callChecked is call, with eth_chainId asked in the same request when an
// expected chain is configured, so that an answer from another chain is
// never taken for this chain's (chain_check.go).
func (e *Ethereum) callChecked(ctx context.Context, method string, height uint64, args ...any) (json.RawMessage, error) {
	if e.cfg.ExpectedChainID == 0 {
		return e.call(ctx, method, height, args...)
	}
	if args == nil {
		args = []any{}
	}
	_, results, errs, err := e.batchCalls(ctx, height, e.cfg.MaxAttempts, []string{methodChainID, method}, [][]any{{}, args})
	if err != nil {
		return nil, err
	}
	if err := e.judgeChainID(ctx, results[0], errs[0]); err != nil {
		return nil, err
	}
	if errs[1] != nil {
		return nil, e.callError(ctx, method, height, errs[1])
	}
	return results[1], nil
}

// BlockByHeight returns the block at height with its full transactions.
func (e *Ethereum) BlockByHeight(ctx context.Context, height uint64) (*chaindata.BlockData, error) {
	const method = "eth_getBlockByNumber"
	raw, err := e.callChecked(ctx, method, height, "0x"+strconv.FormatUint(height, 16), true)
	if err != nil {
		return nil, err
	}
	if isNull(raw) {
		return nil, e.fail(method, fmt.Errorf("rpc endpoint %q: block %d: %w", e.cfg.EndpointName, height, ErrBlockNotFound))
	}
	data, err := decoder{method: method, endpoint: e.cfg.EndpointName, height: height}.decodeBlock(raw)
	if err != nil {
		return nil, e.fail(method, err)
	}
	e.countKeptTxs(method, data)
	return data, nil
}

// Receipts fills the receipt fields and logs of data, by block hash so that
// a reorg between BlockByHeight and Receipts shows as ErrBlockNotFound or a
// MalformedError rather than as receipts of another block.
func (e *Ethereum) Receipts(ctx context.Context, data *chaindata.BlockData) error {
	if len(data.Transactions) == 0 {
		data.Logs = nil
		data.Block.LogCount = 0
		return nil
	}
	if !e.noBlockReceipts.Load() {
		err := e.blockReceipts(ctx, data)
		if err == nil || !unsupported(err) {
			return err
		}
		if !e.noBlockReceipts.Swap(true) {
			e.log.Info("node lacks eth_getBlockReceipts; fetching receipts one transaction at a time", zap.Error(err))
		}
	}
	return e.txReceipts(ctx, data)
}

func (e *Ethereum) blockReceipts(ctx context.Context, data *chaindata.BlockData) error {
	const method = "eth_getBlockReceipts"
	height := data.Block.Number
	raw, err := e.call(ctx, method, height, data.Block.Hash)
	if err != nil {
		return err
	}
	if isNull(raw) {
		return e.fail(method, fmt.Errorf("rpc endpoint %q: receipts of block %d %s: %w",
			e.cfg.EndpointName, height, data.Block.Hash, ErrBlockNotFound))
	}
	if err := (decoder{method: method, endpoint: e.cfg.EndpointName, height: height}).decodeReceipts(data, raw); err != nil {
		return e.fail(method, err)
	}
	e.countKeptReceipts(method, data)
	return nil
}

// txReceipts is the fallback for nodes without eth_getBlockReceipts: one
// eth_getTransactionReceipt per transaction, sent in batches.
func (e *Ethereum) txReceipts(ctx context.Context, data *chaindata.BlockData) error {
	const method = "eth_getTransactionReceipt"
	height := data.Block.Number
	receipts := make([]json.RawMessage, 0, len(data.Transactions))
	for start := 0; start < len(data.Transactions); start += e.cfg.ReceiptsBatch {
		end := min(start+e.cfg.ReceiptsBatch, len(data.Transactions))
		args := make([][]any, 0, end-start)
		for _, tx := range data.Transactions[start:end] {
			args = append(args, []any{tx.Hash})
		}
		results, err := e.batch(ctx, method, height, args)
		if err != nil {
			return err
		}
		for i, r := range results {
			if isNull(r) {
				// The transaction is not (or no longer) in the canonical
				// chain: the block was reorganised away.
				return e.fail(method, fmt.Errorf("rpc endpoint %q: receipt of %s in block %d %s: %w",
					e.cfg.EndpointName, data.Transactions[start+i].Hash, height, data.Block.Hash, ErrBlockNotFound))
			}
		}
		receipts = append(receipts, results...)
	}
	if err := (decoder{method: method, endpoint: e.cfg.EndpointName, height: height}).applyReceipts(data, receipts); err != nil {
		return e.fail(method, err)
	}
	e.countKeptReceipts(method, data)
	return nil
}

// unsupported reports whether the node rejected the method itself rather
// than its arguments.
func unsupported(err error) bool {
	var re *RequestError
	if !errors.As(err, &re) || re.Code == 0 {
		return false
	}
	switch re.Code {
	case -32601, // method not found
		-32004: // EIP-1474 "method not supported"
		return true
	}
	// Some providers answer with a generic code and say so in words. The
	// words must be about the method: "block not available" is a pruned
	// block, not a missing method.
	msg := strings.ToLower(re.Err.Error())
	if !strings.Contains(msg, "method") && !strings.Contains(msg, "getblockreceipts") {
		return false
	}
	for _, s := range []string{"method not found", "not supported", "unsupported", "does not exist", "not available", "not implemented"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// fail records a decoding or not-found error in the metrics and returns it.
func (e *Ethereum) fail(method string, err error) error {
	e.metrics.failure(e.cfg.ChainID, e.cfg.EndpointName, method, errorKind(err))
	return err
}

// call sends one request and returns its raw result ("null" included).
func (e *Ethereum) call(ctx context.Context, method string, height uint64, args ...any) (json.RawMessage, error) {
	var raw json.RawMessage
	err := e.do(ctx, method, height, 1, func(ctx context.Context) error {
		raw = nil
		return e.client.CallContext(ctx, &raw, method, args...)
	})
	return raw, err
}

// batch sends one batch of calls of method, one per args entry.
func (e *Ethereum) batch(ctx context.Context, method string, height uint64, args [][]any) ([]json.RawMessage, error) {
	results := make([]json.RawMessage, len(args))
	err := e.do(ctx, method, height, len(args), func(ctx context.Context) error {
		elems := make([]gethrpc.BatchElem, len(args))
		for i := range elems {
			results[i] = nil
			elems[i] = gethrpc.BatchElem{Method: method, Args: args[i], Result: &results[i]}
		}
		if err := e.client.BatchCallContext(ctx, elems); err != nil {
			return err
		}
		// A transient element error retries the whole batch: simpler than
		// tracking parts, and the batch is small.
		var permanent error
		for _, el := range elems {
			if el.Error == nil {
				continue
			}
			if c := e.classify(ctx, el.Error); c.transient {
				return el.Error
			}
			if permanent == nil {
				permanent = el.Error
			}
		}
		return permanent
	})
	return results, err
}
