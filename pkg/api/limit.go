package api

import (
	"net"
	"net/http"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// clientLimiter is a token bucket per client address (api.rate_limit,
// api.burst) for the requests without an API key (admit.go; a key has
// its own bucket, keys.go). Behind a reverse proxy every request comes
// from the proxy's address: limit there instead (docs/operations.md).
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
