// Package api is `indexer api`: what tideline indexed, served as JSON over
// HTTP, without knowing its schema. Routes under /v1 (routes.go is the
// table, routes_*.go a file a resource), an Etherscan-compatible subset
// (etherscan*.go, a file a module), /openapi.json (docs/) and its own
// /metrics. Reads go through pkg/storage's read-only queries; only
// heights at or below each chain's watermark are served (state.go).
package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/status"
)

// Options is what a Server needs.
type Options struct {
	Config config.API
	// Chains are the chains of the config file, by ID.
	Chains map[string]config.Chain
	// ChainSource, if set, lists every chain to serve (the file's and the
	// registry's, `indexer chain add`); it is read at New and then every
	// ChainRefresh while Serve runs. Without it only Chains are served.
	ChainSource  func(ctx context.Context) (map[string]config.Chain, error)
	ChainRefresh time.Duration
	Store        Store
	// Head reads a chain's head from its node (status route); nil
	// reports the head as unknown.
	Head func(ctx context.Context, chainID string) (uint64, error)
	// Forward passes a JSON-RPC call to a chain's endpoints (the state
	// methods of api.rpc_node_methods; rpc.Forwarder says what it
	// returns); nil answers those methods -32601.
	Forward func(ctx context.Context, chainID, method string, params []json.RawMessage) (json.RawMessage, error)
	// Temporal asks the scheduler for its progress (status route); nil
	// reports the scheduler as unknown.
	Temporal client.Client
	// Registry receives the API's metrics and is served at /metrics.
	Registry *prometheus.Registry
	Logger   *zap.Logger
	// Secrets are strings never to show in an answer or a log line (the
	// chains' endpoint URLs); they are replaced by "<redacted>".
	Secrets []string
}

// Server serves the API. Handler gives the http.Handler; Serve runs it.
type Server struct {
	cfg     config.API
	chains  atomic.Pointer[map[string]config.Chain]
	source  func(ctx context.Context) (map[string]config.Chain, error)
	every   time.Duration
	store   Store
	views   *views
	status  status.Sources
	log     *zap.Logger
	m       *metrics
	limiter *clientLimiter
	keys    *keyring
	secrets []string
	mux     *http.ServeMux
	handler http.Handler // mux with the cross-origin headers (cors.go)
	reg     *prometheus.Registry
	streams *streams // the change streams served (stream_transport.go)
	// JSON-RPC's calls passed to the node (jsonrpc_node.go).
	forward     func(ctx context.Context, chainID, method string, params []json.RawMessage) (json.RawMessage, error)
	nodeMethods map[string]bool
}

// New builds a Server; it does not listen (Serve does).
func New(o Options) (*Server, error) {
	if o.Store.Chain == nil || o.Store.Tokens == nil || o.Store.Traces == nil || o.Store.Stream == nil || o.Store.Keys == nil ||
		o.Store.RPC == nil {
		return nil, errors.New("api: a store view is missing (api.NewStore builds them all)")
	}
	if len(o.Chains) == 0 && o.ChainSource == nil {
		return nil, errors.New("api: no chain configured")
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.Registry == nil {
		o.Registry = prometheus.NewRegistry()
	}
	cfg := o.Config.WithDefaults()
	nodeMethods, err := nodeMethodSet(cfg.RPCNodeMethods, o.Forward != nil)
	if err != nil {
		return nil, err
	}
	s := &Server{
		forward:     o.Forward,
		nodeMethods: nodeMethods,
		cfg:         cfg,
		source:      o.ChainSource,
		every:       o.ChainRefresh,
		store:       o.Store,
		views:       newViews(o.Store.Chain, cfg.StateRefresh),
		log:         o.Logger,
		streams:     newStreams(),
		limiter:     newClientLimiter(cfg.RateLimit, cfg.Burst),
		mux:         http.NewServeMux(),
		reg:         o.Registry,
	}
	s.m = newMetrics(o.Registry, s.streams.count)
	s.keys = &keyring{read: o.Store.Keys.APIKeys, m: s.m}
	kctx, kcancel := context.WithTimeout(context.Background(), cfg.RequestTimeout)
	if err := s.keys.reload(kctx); err != nil {
		s.log.Warn("could not read the API keys; requests with a key get 503 until they are read", zap.Error(err))
	}
	kcancel()
	chains := o.Chains
	if chains == nil {
		chains = map[string]config.Chain{}
	}
	s.chains.Store(&chains)
	if s.source != nil {
		ctx, cancel := context.WithTimeout(context.Background(), cfg.RequestTimeout)
		if err := s.refreshChains(ctx); err != nil {
			s.log.Warn("could not read the chain registry; serving the file's chains until it answers", zap.Error(err))
		}
		cancel()
	}
	for _, sec := range o.Secrets {
		if sec != "" {
			s.secrets = append(s.secrets, sec)
		}
	}
	head := o.Head
	if head == nil {
		head = func(context.Context, string) (uint64, error) { return 0, errors.New("no node client") }
	}
	s.status = status.Sources{
		Head: head,
		Watermark: func(ctx context.Context, chainID string, start uint64) (uint64, bool, error) {
			v, err := s.views.fresh(ctx, chainID, start)
			return v.Watermark, v.HasWatermark, err
		},
		Temporal: o.Temporal,
	}
	s.routes()
	s.handler = withCORS(s.mux, cfg.CORSOrigins)
	return s, nil
}

// Handler is the API's http.Handler (every route, /openapi.json,
// /metrics).
func (s *Server) Handler() http.Handler { return s.handler }

// Serve answers on l until ctx ends, then shuts down, giving requests in
// flight api.request_timeout to finish.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		// The handler's own deadline comes first; this one cuts off a
		// client that does not read its answer.
		WriteTimeout: s.cfg.RequestTimeout + 10*time.Second,
		IdleTimeout:  time.Minute,
		ErrorLog:     zap.NewStdLog(s.log),
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	if s.source != nil && s.every > 0 {
		go s.repeat(ctx, s.every, "could not read the chain registry; serving the chains of the last read", s.refreshChains)
	}
	go s.repeat(ctx, s.cfg.KeysRefresh, "could not read the API keys; using those of the last read", s.keys.reload)
	select {
	case err := <-done:
		return fmt.Errorf("api: serving %s: %w", l.Addr(), err)
	case <-ctx.Done():
	}
	// Streams never end by themselves: end them (each says where to
	// resume), then wait for the other requests.
	s.streams.close()
	sctx, cancel := context.WithTimeout(context.Background(), s.cfg.RequestTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("api: shutting down: %w", err)
	}
	if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// refreshChains reads the chains to serve from the source.
func (s *Server) refreshChains(ctx context.Context) error {
	chains, err := s.source(ctx)
	if err != nil {
		return err
	}
	s.chains.Store(&chains)
	return nil
}

// repeat runs read every interval until ctx ends, each run bounded by
// api.request_timeout; a failed run is logged (what) and changes
// nothing, so the last good read stays in use.
func (s *Server) repeat(ctx context.Context, every time.Duration, what string, read func(context.Context) error) {
	t := time.NewTicker(every)
	defer t.Stop()
	// A refresh of the API process, which runs no activity: a failed read
	// keeps the last good one, and the next tick is its retry.
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			rctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
			if err := read(rctx); err != nil {
				s.log.Warn(what, zap.Error(err))
			}
			cancel()
		}
	}
}

// ReloadKeys reads the API keys now (Serve does every api.keys_refresh);
// on failure the keys of the last good read stay in use.
func (s *Server) ReloadKeys(ctx context.Context) error { return s.keys.reload(ctx) }

// Chain is a chain served now, by ID.
func (s *Server) Chain(id string) (config.Chain, bool) {
	ch, ok := s.chainMap()[id]
	return ch, ok
}

// chainMap is the chains served now.
func (s *Server) chainMap() map[string]config.Chain { return *s.chains.Load() }

// Listen opens api.listen.
func (s *Server) Listen() (net.Listener, error) {
	l, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("api.listen %s: %w", s.cfg.Listen, err)
	}
	return l, nil
}

// deadline gives the request api.request_timeout: every query it runs
// stops then (and carries the rest of it as max_execution_time).
func (s *Server) deadline(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
		defer cancel()
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}

// instrument counts the request by route pattern (never the raw path,
// which holds hashes and addresses) and status, times it, and turns a
// panic into a 500 instead of a dropped connection.
func (s *Server) instrument(route string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		defer func() {
			if p := recover(); p != nil {
				s.log.Error("panic serving a request", zap.String("route", route), zap.Any("panic", p))
				if rec.status == 0 {
					s.writeError(rec, r, &apiError{Status: http.StatusInternalServerError, Code: codeInternal,
						Message: "internal error; the API's log has the detail"})
				}
			}
			code := rec.status
			if code == 0 {
				code = http.StatusOK
			}
			s.m.requests.WithLabelValues(route, fmt.Sprint(code)).Inc()
			s.m.duration.WithLabelValues(route).Observe(time.Since(start).Seconds())
		}()
		h.ServeHTTP(rec, r)
	})
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the connection (a stream's
// flushes, write deadlines and websocket upgrade).
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

// writeJSON sends v with the status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"status":500,"error":"internal","message":"the answer could not be encoded"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// redact removes the secrets from a text meant for a log or an answer:
// those given, and the endpoint URLs of every chain served.
func (s *Server) redact(text string) string {
	for _, sec := range s.secrets {
		text = strings.ReplaceAll(text, sec, "<redacted>")
	}
	for _, ch := range s.chainMap() {
		for _, u := range ch.Endpoints {
			if u != "" {
				text = strings.ReplaceAll(text, u, "<redacted>")
			}
		}
	}
	return text
}
