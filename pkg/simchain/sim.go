package simchain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	gethrpc "github.com/ethereum/go-ethereum/rpc"
)

// Sim is a running simulated chain: an Ethereum JSON-RPC node over HTTP
// (with batches) and websocket (with newHeads), plus admin endpoints, on one
// listener. It is safe for concurrent use.
type Sim struct {
	cfg   Config
	chain *chain
	ln    net.Listener
	srv   *http.Server
	ws    *gethrpc.Server
	heads *announcer

	closed    chan struct{}
	closeOnce sync.Once
	closeErr  error
	wg        sync.WaitGroup

	requests atomic.Uint64 // numbers requests for the fault draws
	stats    counters
}

// Stats counts what the chain served and which faults it injected.
type Stats struct {
	Requests        uint64 `json:"requests"` // HTTP JSON-RPC requests (a batch counts once)
	Calls           uint64 `json:"calls"`    // JSON-RPC calls answered, batch elements included
	Timeouts        uint64 `json:"timeouts"`
	TooManyRequests uint64 `json:"too_many_requests"`
	ServerErrors    uint64 `json:"server_errors"`
	Malformed       uint64 `json:"malformed"` // calls answered with a malformed result
	BytesOut        uint64 `json:"bytes_out"` // HTTP response bodies
}

type counters struct {
	requests, calls, timeouts, tooMany, serverErrors, malformed, bytesOut atomic.Uint64
}

// Start serves the chain described by cfg until ctx ends or Close is
// called.
func Start(ctx context.Context, cfg Config) (*Sim, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("simchain: listen on %s: %w", cfg.Addr, err)
	}
	s := &Sim{cfg: cfg, chain: newChain(cfg), ln: ln, closed: make(chan struct{})}
	s.ws = gethrpc.NewServer()
	s.ws.SetBatchLimits(cfg.MaxBatchCalls, cfg.MaxResponseBytes)
	s.heads = newAnnouncer(s)
	if err := s.ws.RegisterName("eth", &wsEth{s: s}); err != nil {
		ln.Close()
		return nil, fmt.Errorf("simchain: websocket service: %w", err)
	}
	if err := s.ws.RegisterName("net", &wsNet{s: s}); err != nil {
		ln.Close()
		return nil, fmt.Errorf("simchain: websocket service: %w", err)
	}
	wsHandler := s.ws.WebsocketHandler([]string{"*"})
	mux := http.NewServeMux()
	mux.HandleFunc("/admin/", s.serveAdmin)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			wsHandler.ServeHTTP(w, r)
			return
		}
		s.serveRPC(w, r)
	})
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		_ = s.srv.Serve(ln) // returns when Close closes the listener
	}()
	go func() {
		defer s.wg.Done()
		s.heads.run()
	}()
	go func() {
		select {
		case <-ctx.Done():
			_ = s.Close()
		case <-s.closed:
		}
	}()
	return s, nil
}

// HTTPURL is the JSON-RPC endpoint over HTTP (also the admin endpoints'
// base).
func (s *Sim) HTTPURL() string { return "http://" + s.ln.Addr().String() }

// WSURL is the JSON-RPC endpoint over websocket.
func (s *Sim) WSURL() string { return "ws://" + s.ln.Addr().String() }

// Config returns the configuration the chain runs with.
func (s *Sim) Config() Config { return s.cfg }

// Head is the height of the newest block now.
func (s *Sim) Head() uint64 { return s.chain.view().head }

// BlockHash is the hash of the canonical block at h (0x-prefixed lower
// case), whether or not the head has reached h yet.
func (s *Sim) BlockHash(h uint64) string {
	var b [32]byte
	s.chain.view().blockHash(&b, h)
	return hexHash(b)
}

// Expected is what the canonical block at h holds: hashes, timestamp,
// transaction and log counts. It is cheap (no block is built), so a
// benchmark can check hundreds of thousands of heights.
func (s *Sim) Expected(h uint64) Expected { return s.chain.view().expected(h) }

// Reorg replaces the newest depth blocks, and every later one, with a new
// fork: their hashes and transactions change, the parent of the first new
// block is the unchanged block at the fork height, which Reorg returns.
// Replaced blocks are no longer found by hash.
func (s *Sim) Reorg(depth uint64) (fork uint64, err error) {
	fork, err = s.chain.reorg(depth)
	if err == nil {
		s.heads.poke()
	}
	return fork, err
}

// Jump moves the head n blocks ahead at once (a node that catches up after
// a stall) and returns the new head. Blocks past the clock's own head carry
// future timestamps until the clock catches up; the head resumes growing
// with time from there.
func (s *Sim) Jump(n uint64) (head uint64, err error) {
	head, err = s.chain.jump(n)
	if err == nil {
		s.heads.poke()
	}
	return head, err
}

// Poison makes the block and receipts answers of heights malformed until
// Heal: a node that keeps failing at one height.
func (s *Sim) Poison(heights ...uint64) { s.chain.setPoisoned(true, heights...) }

// Heal undoes Poison for heights.
func (s *Sim) Heal(heights ...uint64) { s.chain.setPoisoned(false, heights...) }

// Stats returns the counters so far.
func (s *Sim) Stats() Stats {
	c := &s.stats
	return Stats{Requests: c.requests.Load(), Calls: c.calls.Load(), Timeouts: c.timeouts.Load(),
		TooManyRequests: c.tooMany.Load(), ServerErrors: c.serverErrors.Load(),
		Malformed: c.malformed.Load(), BytesOut: c.bytesOut.Load()}
}

// Close stops serving: held (timed-out) requests are released, websocket
// connections closed.
func (s *Sim) Close() error {
	s.closeOnce.Do(func() {
		close(s.closed)
		s.ws.Stop()
		s.closeErr = s.srv.Close()
		s.wg.Wait()
	})
	return s.closeErr
}

// unit maps a draw to [0, 1).
func unit(u uint64) float64 { return float64(u>>11) / (1 << 53) }

type fault int

const (
	noFault fault = iota
	faultTimeout
	faultTooMany
	faultServer
)

// drawFault decides the fate of request n, deterministically from the seed.
func (s *Sim) drawFault(n uint64) fault {
	u := unit(key(s.cfg.Seed, domFault, n, 0, 0))
	switch c := s.cfg; {
	case u < c.TimeoutRate:
		return faultTimeout
	case u < c.TimeoutRate+c.TooManyRequestsRate:
		return faultTooMany
	case u < c.TimeoutRate+c.TooManyRequestsRate+c.ServerErrorRate:
		return faultServer
	}
	return noFault
}

func (s *Sim) corruptCall(n uint64, i int) bool {
	return s.cfg.MalformedRate > 0 && unit(key(s.cfg.Seed, domCall, n, uint64(i), 0)) < s.cfg.MalformedRate
}

// wait sleeps d unless the request or the chain ends first.
func (s *Sim) wait(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
	case <-s.closed:
	}
	return false
}

// request is one JSON-RPC call as sent.
type request struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

// maxPooledBuf keeps the occasional huge answer from pinning memory.
const maxPooledBuf = 4 << 20

func putBuf(b *[]byte) {
	if cap(*b) <= maxPooledBuf {
		*b = (*b)[:0]
		bufPool.Put(b)
	}
}

func (s *Sim) serveRPC(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "JSON-RPC over HTTP takes POST", http.StatusMethodNotAllowed)
		return
	}
	inp := bufPool.Get().(*[]byte)
	defer putBuf(inp)
	body, err := readBody(*inp, r.Body, s.cfg.MaxRequestBytes)
	*inp = body
	if err != nil {
		if errors.Is(err, errTooLarge) {
			http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
		} else {
			http.Error(w, "reading the request: "+err.Error(), http.StatusBadRequest)
		}
		return
	}
	n := s.requests.Add(1)
	s.stats.requests.Add(1)
	if !s.wait(r.Context(), s.cfg.Latency) {
		return
	}
	switch s.drawFault(n) {
	case faultTimeout:
		s.stats.timeouts.Add(1)
		if s.wait(r.Context(), s.cfg.TimeoutHold) {
			http.Error(w, "simulated timeout", http.StatusGatewayTimeout)
		}
		return
	case faultTooMany:
		s.stats.tooMany.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32005,"message":"simulated rate limit exceeded"}}`)
		return
	case faultServer:
		s.stats.serverErrors.Add(1)
		codes := [...]int{http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable}
		code := codes[n%uint64(len(codes))]
		http.Error(w, "simulated "+http.StatusText(code), code)
		return
	}

	out := bufPool.Get().(*[]byte)
	defer putBuf(out)
	o := &output{w: w, buf: (*out)[:0]}
	w.Header().Set("Content-Type", "application/json")
	s.answer(r.Context(), o, body, n)
	o.finish()
	*out = o.buf
	s.stats.bytesOut.Add(uint64(o.total))
}

var errTooLarge = errors.New("request body too large")

func readBody(buf []byte, r io.Reader, limit int64) ([]byte, error) {
	buf = buf[:0]
	lr := io.LimitReader(r, limit+1)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		k, err := lr.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+k]
		if int64(len(buf)) > limit {
			return buf, fmt.Errorf("%w (limit %d bytes)", errTooLarge, limit)
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// answer writes the JSON-RPC response to body (one call or a batch) to o.
func (s *Sim) answer(ctx context.Context, o *output, body []byte, n uint64) {
	rd := renderer{v: s.chain.view(), p: s.chain.pools, chainID: s.cfg.ChainID}
	trimmed := trimSpace(body)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		var batch []request
		if err := json.Unmarshal(trimmed, &batch); err != nil {
			o.buf = appendError(o.buf, nil, -32700, "parse error: "+err.Error())
			return
		}
		if len(batch) == 0 {
			o.buf = appendError(o.buf, nil, -32600, "empty batch")
			return
		}
		if len(batch) > s.cfg.MaxBatchCalls {
			o.buf = appendError(o.buf, nil, -32600, fmt.Sprintf("batch of %d calls is above the limit of %d", len(batch), s.cfg.MaxBatchCalls))
			return
		}
		o.buf = append(o.buf, '[')
		for i := range batch {
			if i > 0 {
				o.buf = append(o.buf, ',')
			}
			if o.total+len(o.buf) > s.cfg.MaxResponseBytes {
				o.buf = appendError(o.buf, batch[i].ID, -32003, "response too large")
				continue
			}
			if traceMethods[batch[i].Method] && !s.wait(ctx, s.cfg.TraceLatency) {
				return
			}
			o.buf = s.appendResponse(o.buf, &rd, &batch[i], n, i)
			o.flushIfFull()
		}
		o.buf = append(o.buf, ']')
		return
	}
	var req request
	if err := json.Unmarshal(trimmed, &req); err != nil {
		o.buf = appendError(o.buf, nil, -32700, "parse error: "+err.Error())
		return
	}
	if traceMethods[req.Method] && !s.wait(ctx, s.cfg.TraceLatency) {
		return
	}
	o.buf = s.appendResponse(o.buf, &rd, &req, n, 0)
}

func (s *Sim) appendResponse(dst []byte, rd *renderer, req *request, n uint64, i int) []byte {
	s.stats.calls.Add(1)
	var params []json.RawMessage
	if len(req.Params) > 0 && string(req.Params) != "null" {
		if err := json.Unmarshal(req.Params, &params); err != nil {
			return appendError(dst, req.ID, -32602, "params must be an array")
		}
	}
	start := len(dst)
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = appendID(dst, req.ID)
	dst = append(dst, `,"result":`...)
	corrupt := corruptible[req.Method] && s.corruptCall(n, i)
	out, err := rd.appendCall(dst, req.Method, params, corrupt)
	if err != nil {
		return appendError(dst[:start], req.ID, err.code, err.msg)
	}
	if corrupt {
		s.stats.malformed.Add(1)
	}
	return append(out, '}')
}

// corruptible are the methods MalformedRate applies to.
var corruptible = map[string]bool{
	"eth_chainId": true, "eth_blockNumber": true, "eth_getBlockByNumber": true,
	"eth_getBlockByHash": true, "eth_getBlockReceipts": true, "eth_getTransactionReceipt": true,
	"debug_traceBlockByNumber": true, "trace_block": true,
}

// traceMethods are the calls TraceLatency delays, once each.
var traceMethods = map[string]bool{"debug_traceBlockByNumber": true, "trace_block": true}

func appendID(dst []byte, id json.RawMessage) []byte {
	if len(id) == 0 {
		return append(dst, "null"...)
	}
	return append(dst, id...)
}

func appendError(dst []byte, id json.RawMessage, code int, msg string) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = appendID(dst, id)
	dst = append(dst, `,"error":{"code":`...)
	dst = strconv.AppendInt(dst, int64(code), 10)
	dst = append(dst, `,"message":`...)
	m, _ := json.Marshal(msg) // may quote the caller's bytes: JSON escaping, not Go's
	dst = append(dst, m...)
	return append(dst, "}}"...)
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\n' || b[0] == '\r' || b[0] == '\t') {
		b = b[1:]
	}
	return b
}
