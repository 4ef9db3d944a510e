package api

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/apikeys"
)

// Admission: every request of a data route (the REST routes under
// /v1/chains and the Etherscan routes) passes here before any work. The
// key is read from the X-API-Key header or Authorization: Bearer, and on
// the Etherscan routes also from Etherscan's apikey parameter (query or
// form). The REST routes keep refusing parameters they do not know, so
// ?apikey= there is a 400. /openapi.json, /metrics and the answers to
// unknown paths and methods need no key.
//
//   - No key: served anonymously under the per-client-address limit
//     (api.rate_limit, api.burst) when api.anonymous is on, else 401.
//   - A key: refused with 401 when it is malformed, not stored or
//     revoked; with 429 over its own limit; with 503 while the keys have
//     never been read (nothing is let through on a failure).
//   - An apikey parameter that is not a tideline key (no tl_ prefix) is
//     ignored while api.anonymous is on: Etherscan tools send their
//     Etherscan key everywhere, and they kept working before keys existed.
//
// Answers are each API's own: REST's apiError (401 unauthorized, 429
// rate_limited), Etherscan's envelope with Etherscan's texts and the same
// HTTP statuses. 429s carry Retry-After, 401s WWW-Authenticate.

// Rejection reasons (the metric's reason label).
const (
	reasonMissing     = "missing"
	reasonUnknown     = "unknown"
	reasonRevoked     = "revoked"
	reasonRateLimited = "rate_limited"
	reasonNotLoaded   = "keys_unavailable"
)

// keyAnonymous and keyUnknown are the key_id label of requests without a
// key and with one that is not stored (never the key itself).
const (
	keyAnonymous = "anonymous"
	keyUnknown   = "unknown"
)

// Etherscan's own results for these refusals.
const (
	esMissingKey = "Missing/Invalid API Key"
	esInvalidKey = "Invalid API Key"
	esRateLimit  = "Max rate limit reached"
)

// rejection is a request refused at admission.
type rejection struct {
	status     int
	reason     string
	keyID      string
	message    string // REST
	esResult   string // Etherscan
	retryAfter int    // seconds; 0 for none
}

// surface is which API a route belongs to: a refusal is answered in its
// envelope, and Etherscan's route reads the key from its parameters too.
type surface int

const (
	surfaceREST surface = iota
	surfaceEtherscan
	surfaceJSONRPC
)

// keyIDContext carries the admitted key's id (or "anonymous") to the
// handler's failure log lines.
type keyIDContext struct{}

func keyIDOf(ctx context.Context) string {
	id, _ := ctx.Value(keyIDContext{}).(string)
	return id
}

// admit checks the request's key and limit, then runs h.
func (s *Server) admit(route string, api surface, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if keyParam(route, api) {
			// The form holds apikey. Parsed once here: the handler's own
			// ParseForm then finds it done.
			r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
			if err := r.ParseForm(); err != nil {
				writeJSON(w, http.StatusOK, envelope{Status: "0", Message: "NOTOK", Result: "Error! Invalid request: " + err.Error()})
				return
			}
		}
		id, rej := s.admission(route, r, api, time.Now())
		if rej != nil {
			s.reject(w, r, api, rej)
			return
		}
		s.m.keyRequests.WithLabelValues(id).Inc()
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), keyIDContext{}, id)))
	})
}

// admission decides: the key id (or "anonymous") of a request let
// through, or why it is not.
func (s *Server) admission(route string, r *http.Request, api surface, now time.Time) (string, *rejection) {
	param := keyParam(route, api)
	key, conflict := s.presentedKey(r, param)
	if conflict {
		return "", &rejection{status: http.StatusUnauthorized, reason: reasonUnknown, keyID: keyUnknown,
			message: "two different API keys given (X-API-Key, Authorization, apikey); give one", esResult: esInvalidKey}
	}
	if key == "" {
		if !s.cfg.AnonymousAllowed() {
			where := "the X-API-Key header or Authorization: Bearer"
			if param {
				where += " or the apikey parameter"
			} else {
				where += " (the apikey parameter is read on the Etherscan and stream routes only)"
			}
			return "", &rejection{status: http.StatusUnauthorized, reason: reasonMissing, keyID: keyAnonymous,
				message: "an API key is required (api.anonymous is off): send it in " + where, esResult: esMissingKey}
		}
		if !s.limiter.allow(clientOf(r), now) {
			s.m.rateLimited.WithLabelValues(route).Inc()
			return "", &rejection{status: http.StatusTooManyRequests, reason: reasonRateLimited, keyID: keyAnonymous,
				message:  "too many requests from this client (api.rate_limit); retry after a second, or use an API key",
				esResult: esRateLimit, retryAfter: 1}
		}
		return keyAnonymous, nil
	}
	if err := apikeys.Check(key); err != nil {
		return "", &rejection{status: http.StatusUnauthorized, reason: reasonUnknown, keyID: keyUnknown,
			message: "invalid API key: " + err.Error(), esResult: esInvalidKey}
	}
	k, loaded := s.keys.lookup(key)
	switch {
	case !loaded:
		return "", &rejection{status: http.StatusServiceUnavailable, reason: reasonNotLoaded, keyID: keyUnknown,
			message: "the API keys could not be read yet; retry", esResult: "Error! The API keys could not be read yet; retry",
			retryAfter: 1}
	case k == nil:
		return "", &rejection{status: http.StatusUnauthorized, reason: reasonUnknown, keyID: keyUnknown,
			message: "invalid API key: no such key", esResult: esInvalidKey}
	case k.revoked:
		return "", &rejection{status: http.StatusUnauthorized, reason: reasonRevoked, keyID: k.id,
			message: "invalid API key: key " + k.id + " was revoked", esResult: esInvalidKey}
	case k.limiter != nil && !k.limiter.AllowN(now, 1):
		return "", &rejection{status: http.StatusTooManyRequests, reason: reasonRateLimited, keyID: k.id,
			message:  "too many requests with key " + k.id + " (its rate limit); retry after Retry-After",
			esResult: esRateLimit, retryAfter: retryAfter(k.limiter, now)}
	}
	return k.id, nil
}

// streamRoute is the change stream's route pattern (routes.go).
const streamRoute = "GET /v1/chains/{id}/stream"

// keyParam tells the routes that read a key from the apikey parameter:
// Etherscan's, whose clients send it so, and the change stream's, whose
// browser clients (EventSource, WebSocket) cannot set a header. A URL
// may end up in a proxy's log: a header is better where it can be sent.
func keyParam(route string, api surface) bool { return api == surfaceEtherscan || route == streamRoute }

// presentedKey is the key the request carries ("" for none); conflict
// when it carries two different ones. param reads the apikey parameter
// too (keyParam).
func (s *Server) presentedKey(r *http.Request, param bool) (key string, conflict bool) {
	var given []string
	if v := strings.TrimSpace(r.Header.Get("X-API-Key")); v != "" {
		given = append(given, v)
	}
	if scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " "); ok && strings.EqualFold(scheme, "Bearer") {
		if token = strings.TrimSpace(token); token != "" {
			given = append(given, token)
		}
	}
	if param {
		v := strings.TrimSpace(r.Form.Get("apikey"))
		if v != "" && (apikeys.HasPrefix(v) || !s.cfg.AnonymousAllowed()) {
			given = append(given, v)
		}
	}
	for _, v := range given {
		if key != "" && v != key {
			return "", true
		}
		key = v
	}
	return key, false
}

// reject answers a refused request in its API's envelope and counts it.
func (s *Server) reject(w http.ResponseWriter, r *http.Request, api surface, rej *rejection) {
	s.m.keyRejections.WithLabelValues(rej.reason, rej.keyID).Inc()
	s.log.Debug("request refused", zap.String("route", r.Pattern), zap.Int("status", rej.status),
		zap.String("reason", rej.reason), zap.String("key_id", rej.keyID))
	if rej.status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="tideline"`)
	}
	if rej.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(rej.retryAfter))
	}
	switch api {
	case surfaceEtherscan:
		writeJSON(w, rej.status, envelope{Status: "0", Message: "NOTOK", Result: rej.esResult})
		return
	case surfaceJSONRPC:
		writeJSON(w, rej.status, rpcRefusal(rej))
		return
	}
	code := codeUnauthorized
	switch rej.status {
	case http.StatusTooManyRequests:
		code = codeRateLimited
	case http.StatusServiceUnavailable:
		code = codeUnavailable
	}
	s.writeError(w, r, &apiError{Status: rej.status, Code: code, Message: rej.message})
}
