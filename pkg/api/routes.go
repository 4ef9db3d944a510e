package api

import (
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tideline-dev/tideline/docs"
)

// The route table: every route the API answers. The REST routes under
// /v1 have a file a resource (routes_chains.go, routes_blocks.go,
// routes_txs.go, routes_addresses.go, routes_logs.go, routes_stats.go);
// each checks its parameters first (400), then the chain's view: a height
// above the watermark is not served (404, "not indexed yet"), one at or
// below the pruned height is gone (410). Rows come from the main tables
// with FINAL and is_canonical = 1 (pkg/storage). The Etherscan subset is
// etherscan.go and its modules' files.

// handlerFunc answers a REST request with a value to send as JSON (200)
// or an error.
type handlerFunc func(r *http.Request) (any, *apiError)

// routes registers every route. A path registered for GET also answers
// other methods with a JSON 405; anything else is a JSON 404.
func (s *Server) routes() {
	s.rest("/v1/chains", s.listChains)
	s.rest("/v1/chains/{id}/status", s.chainStatus)
	s.rest("/v1/chains/{id}/blocks", s.listBlocks)
	s.rest("/v1/chains/{id}/blocks/{height}", s.blockByHeight)
	s.rest("/v1/chains/{id}/txs/{hash}", s.txByHash)
	s.rest("/v1/chains/{id}/txs/{hash}/trace", s.txTrace)
	s.rest("/v1/chains/{id}/addresses/{address}/internal-txs", s.addressInternalTxs)
	s.rest("/v1/chains/{id}/addresses/{address}/txs", s.addressTxs)
	s.rest("/v1/chains/{id}/logs", s.listLogs)
	s.rest("/v1/chains/{id}/stats", s.stats)
	s.rest("/v1/chains/{id}/tokens/{address}", s.token)
	s.rest("/v1/chains/{id}/tokens/{address}/transfers", s.tokenTransfers)
	s.rest("/v1/chains/{id}/tokens/{address}/holders", s.tokenHolders)
	s.rest("/v1/chains/{id}/addresses/{address}/transfers", s.addressTransfers)
	s.rest("/v1/chains/{id}/addresses/{address}/tokens", s.addressTokens)
	s.rest("/v1/chains/{id}/events", s.events)
	s.rest("/v1/chains/{id}/txs/{hash}/input", s.txInput)
	// The change stream: its own long-lived answer, no request deadline
	// (stream.go bounds each write instead).
	s.mux.Handle(streamRoute, s.instrument(streamRoute, s.admit(streamRoute, surfaceREST, http.HandlerFunc(s.stream))))
	s.mux.Handle("/v1/chains/{id}/stream", s.notAllowed("/v1/chains/{id}/stream", false))
	// …/blocks/hash/{hash} and …/blocks/{height}/txs overlap as patterns
	// (…/blocks/hash/txs matches both), which ServeMux refuses: one
	// pattern takes both and hands each to its own instrumented route.
	byHash := s.restHandler("/v1/chains/{id}/blocks/hash/{hash}", s.blockByHash)
	blockTxs := s.restHandler("/v1/chains/{id}/blocks/{height}/txs", s.blockTxs)
	unmatched := s.unmatched()
	s.mux.Handle("GET /v1/chains/{id}/blocks/{height}/{sub}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.PathValue("height") == "hash":
			r.SetPathValue("hash", r.PathValue("sub"))
			byHash.ServeHTTP(w, r)
		case r.PathValue("sub") == "txs":
			blockTxs.ServeHTTP(w, r)
		default:
			unmatched.ServeHTTP(w, r)
		}
	}))
	s.mux.Handle("/v1/chains/{id}/blocks/{height}/{sub}", s.notAllowed("/v1/chains/{id}/blocks/{height}/{sub}", false))
	// Etherscan clients send GET and POST (a form), as Etherscan takes both.
	for _, m := range []string{"GET", "POST"} {
		pattern := m + " /v1/chains/{id}/etherscan/api"
		s.mux.Handle(pattern, s.instrument(pattern, s.admit(pattern, surfaceEtherscan, s.deadline(http.HandlerFunc(s.etherscan)))))
	}
	s.mux.Handle("/v1/chains/{id}/etherscan/api", s.notAllowed("/v1/chains/{id}/etherscan/api", true))
	for _, m := range []string{"GET", "POST"} { // Etherscan's V2 addressing (etherscan_v2.go)
		pattern := m + " /v2/api"
		s.mux.Handle(pattern, s.instrument(pattern, s.admit(pattern, surfaceEtherscan, s.deadline(http.HandlerFunc(s.etherscanV2)))))
	}
	s.mux.Handle("/v2/api", s.notAllowed("/v2/api", true))

	// JSON-RPC (jsonrpc.go): POST only, as nodes take it.
	s.mux.Handle(rpcRoute, s.instrument(rpcRoute, s.admit(rpcRoute, surfaceJSONRPC, s.deadline(http.HandlerFunc(s.jsonrpc)))))
	s.mux.Handle("/v1/chains/{id}/rpc", s.notAllowedRPC())

	s.mux.Handle("GET /openapi.json", s.instrument("GET /openapi.json", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(docs.OpenAPI)
	})))
	s.mux.Handle("GET /metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{Registry: s.reg}))
	s.mux.Handle("/", unmatched)
}

// rest registers a REST route for GET, and a 405 for other methods.
func (s *Server) rest(path string, h handlerFunc) {
	s.mux.Handle("GET "+path, s.restHandler(path, h))
	s.mux.Handle(path, s.notAllowed(path, false))
}

// restHandler is a REST route with the middleware: metrics (labelled by
// the pattern), the API key and rate limit (admit.go) and the request
// deadline.
func (s *Server) restHandler(path string, h handlerFunc) http.Handler {
	pattern := "GET " + path
	return s.instrument(pattern, s.admit(pattern, surfaceREST, s.deadline(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v, e := h(r)
		if e != nil {
			s.writeError(w, r, e)
			return
		}
		writeJSON(w, http.StatusOK, v)
	}))))
}

func (s *Server) notAllowed(path string, post bool) http.Handler {
	allow := "GET, HEAD"
	if post {
		allow += ", POST"
	}
	return s.instrument(path, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allow)
		s.writeError(w, r, &apiError{Status: http.StatusMethodNotAllowed, Code: codeNotAllowed,
			Message: fmt.Sprintf("%s is not allowed here; use %s", r.Method, allow)})
	}))
}

// notAllowedRPC answers another method than POST on the JSON-RPC route.
func (s *Server) notAllowedRPC() http.Handler {
	const route = "/v1/chains/{id}/rpc"
	return s.instrument(route, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Allow", "POST")
		writeJSON(w, http.StatusMethodNotAllowed, rpcFailure(nil, rpcErrorf(rpcInvalidRequest, "JSON-RPC is POSTed to this route")))
	}))
}

func (s *Server) unmatched() http.Handler {
	return s.instrument("unmatched", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, notFound("no route %s %s; the routes are listed at /openapi.json", r.Method, clip(r.URL.Path)))
	}))
}
