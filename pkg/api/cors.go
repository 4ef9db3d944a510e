package api

import (
	"net/http"

	"github.com/rs/cors"
)

// Cross-origin reads (api.cors_origins): a page served from another
// origin, such as an explorer UI (Otterscan) or a dapp speaking JSON-RPC,
// may read the API from a browser only when the browser is told so. Off
// unless configured, as a node is without --http.corsdomain: an API
// reachable only inside a network must not become readable by any page
// its users open. rs/cors answers the preflight (OPTIONS) itself, before
// keys and rate limits, which a browser's preflight carries none of.

// withCORS wraps h with the cross-origin headers of origins; none leaves h
// as it is.
func withCORS(h http.Handler, origins []string) http.Handler {
	if len(origins) == 0 {
		return h
	}
	return cors.New(cors.Options{
		AllowedOrigins: origins,
		AllowedMethods: []string{http.MethodGet, http.MethodPost, http.MethodHead},
		// The request headers the API reads: the body's type, a key
		// (X-API-Key or a bearer token), and a stream's resume point.
		AllowedHeaders: []string{"Content-Type", "Authorization", "X-API-Key", "Last-Event-ID"},
		// Retry-After tells a refused client when to come back.
		ExposedHeaders: []string{"Retry-After"},
		// Keys go in a header, never in a cookie: no credentials.
		AllowCredentials: false,
		MaxAge:           600,
	}).Handler(h)
}
