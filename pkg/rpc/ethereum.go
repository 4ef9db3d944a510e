package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	gethrpc "github.com/ethereum/go-ethereum/rpc"
	"github.com/tideline-dev/tideline/pkg/chain"
	"go.uber.org/zap"
	"golang.org/x/time/rate"
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
	// BatchSize caps the calls sent in one JSON-RPC batch (the per-receipt
	// fallback); providers reject large batches. Default 100.
	BatchSize int
	// MaxResponseBytes caps one answer: a node (or a proxy in front of it)
	// that streams an endless or absurd body is refused with a malformed
	// error instead of exhausting memory. Default 256 MiB, far above any
	// real block with receipts.
	MaxResponseBytes int64
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
	if c.BatchSize <= 0 {
		c.BatchSize = 100
	}
	if c.MaxResponseBytes <= 0 {
		c.MaxResponseBytes = 256 << 20
	}
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
		opts = append(opts, gethrpc.WithHTTPClient(&http.Client{Transport: limitedTransport{tr, cfg.MaxResponseBytes}}))
	} else {
		opts = append(opts, gethrpc.WithWebsocketMessageSizeLimit(cfg.MaxResponseBytes))
	}
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
	raw, err := e.call(ctx, method, 0)
	if err != nil {
		return 0, err
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return 0, e.fail(method, decoder{method, e.cfg.EndpointName, 0}.malformed("result", "expected a hex string, got %s", snippet(raw)))
	}
	h, err := parseQuantity(s)
	if err != nil {
		return 0, e.fail(method, decoder{method, e.cfg.EndpointName, 0}.malformed("result", "%v", err))
	}
	return h, nil
}

// BlockByHeight returns the block at height with its full transactions.
func (e *Ethereum) BlockByHeight(ctx context.Context, height uint64) (*chain.BlockData, error) {
	const method = "eth_getBlockByNumber"
	raw, err := e.call(ctx, method, height, "0x"+strconv.FormatUint(height, 16), true)
	if err != nil {
		return nil, err
	}
	if isNull(raw) {
		return nil, e.fail(method, fmt.Errorf("rpc endpoint %q: block %d: %w", e.cfg.EndpointName, height, ErrBlockNotFound))
	}
	data, err := decoder{method, e.cfg.EndpointName, height}.decodeBlock(raw)
	if err != nil {
		return nil, e.fail(method, err)
	}
	return data, nil
}

// Receipts fills the receipt fields and logs of data, by block hash so that
// a reorg between BlockByHeight and Receipts shows as ErrBlockNotFound or a
// MalformedError rather than as receipts of another block.
func (e *Ethereum) Receipts(ctx context.Context, data *chain.BlockData) error {
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

func (e *Ethereum) blockReceipts(ctx context.Context, data *chain.BlockData) error {
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
	d := decoder{method, e.cfg.EndpointName, height}
	var receipts []json.RawMessage
	if err := json.Unmarshal(raw, &receipts); err != nil {
		return e.fail(method, d.malformed("result", "expected an array of receipts, got %s", snippet(raw)))
	}
	if err := d.applyReceipts(data, receipts); err != nil {
		return e.fail(method, err)
	}
	return nil
}

// txReceipts is the fallback for nodes without eth_getBlockReceipts: one
// eth_getTransactionReceipt per transaction, sent in batches.
func (e *Ethereum) txReceipts(ctx context.Context, data *chain.BlockData) error {
	const method = "eth_getTransactionReceipt"
	height := data.Block.Number
	receipts := make([]json.RawMessage, 0, len(data.Transactions))
	for start := 0; start < len(data.Transactions); start += e.cfg.BatchSize {
		end := min(start+e.cfg.BatchSize, len(data.Transactions))
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
	if err := (decoder{method, e.cfg.EndpointName, height}).applyReceipts(data, receipts); err != nil {
		return e.fail(method, err)
	}
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

// failure is one failed attempt, classified.
type failure struct {
	transient bool
	malformed string // field to blame when the answer itself was unusable
	code      int
	status    int
	err       error // URL-free
}

// do runs attempt with the rate limiter, a per-attempt timeout, metrics and
// retries of transient failures.
func (e *Ethereum) do(ctx context.Context, method string, height uint64, n int, attempt func(context.Context) error) error {
	var last failure
	for i := 1; ; i++ {
		if err := e.wait(ctx, n); err != nil {
			return e.giveUp(ctx, method, i-1, last, err)
		}
		actx, cancel := context.WithTimeout(ctx, e.cfg.Timeout)
		start := time.Now()
		err := attempt(actx)
		cancel()
		e.metrics.request(e.cfg.ChainID, e.cfg.EndpointName, method, n, time.Since(start))
		if err == nil {
			return nil
		}
		last = e.classify(ctx, err)
		if ctx.Err() != nil {
			// The caller gave up; not the endpoint's fault, so not counted.
			return e.giveUp(ctx, method, i, last, nil)
		}
		switch {
		case last.malformed != "":
			return e.fail(method, decoder{method, e.cfg.EndpointName, height}.malformed(last.malformed, "%v", last.err))
		case !last.transient:
			e.metrics.failure(e.cfg.ChainID, e.cfg.EndpointName, method, KindOther)
			return &RequestError{Method: method, Endpoint: e.cfg.EndpointName, Code: last.code, HTTPStatus: last.status, Err: last.err}
		}
		e.metrics.failure(e.cfg.ChainID, e.cfg.EndpointName, method, KindTransient)
		if i >= e.cfg.MaxAttempts {
			return e.giveUp(ctx, method, i, last, nil)
		}
		wait := e.backoff(i)
		e.log.Debug("retrying rpc request", zap.String("method", method), zap.Uint64("height", height),
			zap.Int("attempt", i), zap.Duration("wait", wait), zap.Error(last.err))
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return e.giveUp(ctx, method, i, last, ctx.Err())
		case <-t.C:
		}
	}
}

// giveUp builds the TransientError for a request that ends without success;
// stopErr is why no further attempt is made when it is not the last
// failure itself (the context ended while waiting).
func (e *Ethereum) giveUp(ctx context.Context, method string, attempts int, last failure, stopErr error) error {
	err := last.err
	switch {
	case err == nil && stopErr != nil:
		err = stopErr
	case stopErr != nil:
		err = &cleanError{msg: fmt.Sprintf("%v (last failure: %v)", stopErr, last.err), causes: []error{stopErr, last.err}}
	}
	if err == nil {
		err = ctx.Err()
	}
	level := zap.WarnLevel
	if ctx.Err() != nil {
		// The caller stopped waiting; nothing is wrong with the endpoint.
		level = zap.DebugLevel
	}
	e.log.Log(level, "rpc request failed", zap.String("method", method), zap.Int("attempts", attempts), zap.Error(err))
	return &TransientError{Method: method, Endpoint: e.cfg.EndpointName, Attempts: attempts,
		Code: last.code, HTTPStatus: last.status, Err: err}
}

func (e *Ethereum) wait(ctx context.Context, n int) error {
	if e.limiter == nil {
		return nil
	}
	// WaitN refuses n above the burst, so a large batch waits in slices.
	for n > 0 {
		k := min(n, e.cfg.Burst)
		if err := e.limiter.WaitN(ctx, k); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			// The limiter saw the wait would outlast the deadline.
			return context.DeadlineExceeded
		}
		n -= k
	}
	return nil
}

func (e *Ethereum) backoff(attempt int) time.Duration {
	d := e.cfg.BackoffInitial
	for i := 1; i < attempt && d < e.cfg.BackoffMax; i++ {
		d *= 2
	}
	d = min(d, e.cfg.BackoffMax)
	return time.Duration(rand.Int64N(int64(d)) + 1)
}

// classify decides whether a failed attempt is worth retrying. ctx is the
// caller's context: a deadline of the attempt's own timeout is transient,
// the caller's end is not retried (do checks ctx.Err()).
func (e *Ethereum) classify(ctx context.Context, err error) failure {
	f := failure{err: e.clean(err)}
	var rpcErr gethrpc.Error
	var httpErr gethrpc.HTTPError
	var netErr net.Error
	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &httpErr):
		f.status = httpErr.StatusCode
		f.transient = httpErr.StatusCode == http.StatusTooManyRequests ||
			httpErr.StatusCode == http.StatusRequestTimeout || httpErr.StatusCode >= 500
		f.err = &cleanError{msg: e.redact.clean(httpStatusText(httpErr)), causes: []error{e.safeCause(httpErr)}}
	case errors.As(err, &rpcErr):
		f.code = rpcErr.ErrorCode()
		// -32005: "limit exceeded" (EIP-1474), what providers send when
		// throttling over a 200 response.
		f.transient = f.code == -32005
	case errors.Is(err, gethrpc.ErrNoResult):
		f.malformed = "result"
	case errors.Is(err, gethrpc.ErrMissingBatchResponse):
		f.malformed = "batch"
	case errors.Is(err, ErrResponseTooLarge):
		f.malformed = "response size"
	case errors.As(err, &syntaxErr), errors.As(err, &typeErr):
		f.malformed = "response"
	case errors.Is(err, gethrpc.ErrClientQuit):
		f.transient = false
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		f.transient = ctx.Err() == nil
		if f.transient {
			f.err = &cleanError{msg: fmt.Sprintf("no answer within %v", e.cfg.Timeout), causes: []error{context.DeadlineExceeded}}
		}
	case errors.As(err, &netErr), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, net.ErrClosed):
		f.transient = true
	default:
		// go-ethereum reports lost websocket connections with unexported
		// errors; anything that is not an answer from the node is a
		// transport problem, and retries are bounded anyway.
		f.transient = true
	}
	return f
}

func httpStatusText(e gethrpc.HTTPError) string {
	body := strings.TrimSpace(string(e.Body))
	if len(body) > 200 {
		body = body[:200] + "..."
	}
	if body == "" {
		return e.Status
	}
	return e.Status + ": " + body
}

// clean replaces err by an error whose text, and the text of everything it
// wraps, has no trace of the URL.
func (e *Ethereum) clean(err error) error {
	return &cleanError{msg: e.redact.clean(err.Error()), causes: []error{e.safeCause(err)}}
}

// safeCause returns err for unwrapping if its text is free of the URL.
// net/http's *url.Error (text "Post \"<url>\": ...") is peeled off; if the
// text still leaks (a DNS error naming the host, a body echoing the path),
// only what callers match on is kept: context, EOF and errno causes.
func (e *Ethereum) safeCause(err error) error {
	if e.redact.clean(err.Error()) == err.Error() {
		return err
	}
	var ue *url.Error
	if errors.As(err, &ue) && e.redact.clean(ue.Err.Error()) == ue.Err.Error() {
		return ue.Err
	}
	var causes []error
	for _, s := range []error{context.DeadlineExceeded, context.Canceled, io.EOF, io.ErrUnexpectedEOF, net.ErrClosed} {
		if errors.Is(err, s) {
			causes = append(causes, s)
		}
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		causes = append(causes, errno)
	}
	return &cleanError{msg: e.redact.clean(err.Error()), causes: causes}
}

// redactor removes an endpoint URL and its parts from text.
type redactor struct {
	secrets []string
}

const redacted = "<redacted>"

func newRedactor(raw string) *redactor {
	r := &redactor{}
	add := func(s string) {
		// Short pieces ("/", "v3", a port) are not secrets, and replacing
		// them would garble messages.
		if len(s) >= 4 {
			r.secrets = append(r.secrets, s)
		}
	}
	add(raw)
	if u, err := url.Parse(raw); err == nil {
		add(u.Redacted())
		add(u.Host)
		add(u.Hostname())
		add(u.Path)
		add(u.EscapedPath())
		add(u.RawQuery)
		add(u.Fragment)
		if u.User != nil {
			add(u.User.Username())
			if p, ok := u.User.Password(); ok {
				add(p)
			}
		}
		for _, seg := range strings.Split(u.Path, "/") {
			add(seg)
		}
		for _, vs := range u.Query() {
			for _, v := range vs {
				add(v)
			}
		}
		// net/http quotes the URL in its errors, escaping as Go does.
		add(strconv.Quote(raw))
	}
	// Longest first, so that a piece never leaves half of a longer one.
	sort.Slice(r.secrets, func(i, j int) bool { return len(r.secrets[i]) > len(r.secrets[j]) })
	return r
}

func (r *redactor) clean(s string) string {
	for _, sec := range r.secrets {
		s = strings.ReplaceAll(s, sec, redacted)
	}
	return s
}

// ErrResponseTooLarge is the read error of an answer longer than
// EthereumConfig.MaxResponseBytes; it surfaces as a *MalformedError.
var ErrResponseTooLarge = errors.New("response larger than the configured limit")

// limitedTransport cuts every response body at max bytes.
type limitedTransport struct {
	next http.RoundTripper
	max  int64
}

func (t limitedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	resp.Body = &limitedBody{ReadCloser: resp.Body, left: t.max}
	return resp, nil
}

type limitedBody struct {
	io.ReadCloser
	left int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, ErrResponseTooLarge
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}
