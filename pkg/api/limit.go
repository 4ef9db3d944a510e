package api

import (
	"net"
	"net/http"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// clientLimiter is a token bucket per client address (api.rate_limit,
// api.burst). Behind a reverse proxy every request comes from the proxy's
// address: limit there instead (docs/operations.md).
type clientLimiter struct {
	rate  rate.Limit
	burst int

	mu      sync.Mutex
	clients map[string]*clientBucket
	swept   time.Time
}

type clientBucket struct {
	l    *rate.Limiter
	seen time.Time
}

// idleAfter is how long a client's bucket is kept without requests; by
// then it is full again, so forgetting it changes nothing.
const idleAfter = 5 * time.Minute

func newClientLimiter(perSecond float64, burst int) *clientLimiter {
	if perSecond <= 0 {
		return nil
	}
	return &clientLimiter{rate: rate.Limit(perSecond), burst: burst, clients: map[string]*clientBucket{}}
}

// allow takes a token of the client's bucket.
func (c *clientLimiter) allow(client string, now time.Time) bool {
	if c == nil {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if now.Sub(c.swept) > idleAfter {
		for k, b := range c.clients {
			if now.Sub(b.seen) > idleAfter {
				delete(c.clients, k)
			}
		}
		c.swept = now
	}
	b := c.clients[client]
	if b == nil {
		b = &clientBucket{l: rate.NewLimiter(c.rate, c.burst)}
		c.clients[client] = b
	}
	b.seen = now
	return b.l.AllowN(now, 1)
}

// clientOf is the request's remote address without the port.
func clientOf(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// limit refuses a client over its rate: 429 with Retry-After for the REST
// routes; for the Etherscan route, Etherscan's own answer (HTTP 200,
// status "0", "Max rate limit reached"), which its clients recognise.
func (s *Server) limit(route string, etherscan bool, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.limiter.allow(clientOf(r), time.Now()) {
			h.ServeHTTP(w, r)
			return
		}
		s.m.rateLimited.WithLabelValues(route).Inc()
		if etherscan {
			writeJSON(w, http.StatusOK, envelope{Status: "0", Message: "NOTOK", Result: "Max rate limit reached"})
			return
		}
		s.writeError(w, r, &apiError{Status: http.StatusTooManyRequests, Code: codeRateLimited,
			Message: "too many requests from this client (api.rate_limit); retry after a second"})
	})
}
