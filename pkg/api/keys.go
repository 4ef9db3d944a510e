package api

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/tideline-dev/tideline/pkg/apikeys"
	"github.com/tideline-dev/tideline/pkg/storage"
)

// The API keys as the API last read them (table api_keys, written by
// `indexer apikey`), read again every api.keys_refresh. Only hashes are
// read: a request's key is hashed and looked up. A failed read keeps the
// last good set (a revocation may then wait for the next good read, which
// the reload metrics show); before the first good read no key is
// accepted, so a failure never lets a request through that a read would
// have refused.

// keySet is one read of the keys, by hash.
type keySet struct {
	byHash map[string]*apiKey
	active int
}

// apiKey is one stored key as the API uses it.
type apiKey struct {
	id      string
	revoked bool
	// limiter is the key's own bucket; nil when its rate is 0 (no limit).
	// It is kept across reads while the key's limits stay, so a reload
	// does not refill it.
	limiter *rate.Limiter
}

// keyring holds the current keySet.
type keyring struct {
	read func(ctx context.Context) ([]storage.APIKeyRecord, error)
	m    *metrics

	set atomic.Pointer[keySet] // nil until the first good read
	mu  sync.Mutex             // one reload at a time
}

// reload reads the keys and swaps them in; on failure the last good set
// stays. Serve runs it every api.keys_refresh (Server.repeat).
func (k *keyring) reload(ctx context.Context) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	recs, err := k.read(ctx)
	if err != nil {
		k.m.keyReloadFailures.Inc()
		return err
	}
	old := k.set.Load()
	next := &keySet{byHash: make(map[string]*apiKey, len(recs))}
	for _, r := range recs {
		key := &apiKey{id: r.ID, revoked: r.Revoked}
		if !r.Revoked {
			next.active++
			key.limiter = keepLimiter(old, r)
		}
		next.byHash[r.KeyHash] = key
	}
	k.set.Store(next)
	k.m.keysLoaded.WithLabelValues("active").Set(float64(next.active))
	k.m.keysLoaded.WithLabelValues("revoked").Set(float64(len(recs) - next.active))
	k.m.keysReloaded.SetToCurrentTime()
	return nil
}

// keepLimiter is the bucket of a key: the previous read's, its limits set
// to the stored ones, or a new one.
func keepLimiter(old *keySet, r storage.APIKeyRecord) *rate.Limiter {
	if r.Rate <= 0 {
		return nil
	}
	burst := int(max(r.Burst, 1))
	if old != nil {
		if prev := old.byHash[r.KeyHash]; prev != nil && prev.limiter != nil {
			now := time.Now()
			prev.limiter.SetLimitAt(now, rate.Limit(r.Rate))
			prev.limiter.SetBurstAt(now, burst)
			return prev.limiter
		}
	}
	return rate.NewLimiter(rate.Limit(r.Rate), burst)
}

// lookup finds a presented key; loaded is false before the first good
// read.
func (k *keyring) lookup(key string) (found *apiKey, loaded bool) {
	set := k.set.Load()
	if set == nil {
		return nil, false
	}
	// A map look-up by hash needs no constant-time comparison: timing can
	// at most tell how a guess's SHA-256 compares to stored hashes, which
	// says nothing about any key.
	return set.byHash[apikeys.Hash(key)], true
}

// retryAfter is the whole seconds (at least 1) until l has a token.
func retryAfter(l *rate.Limiter, now time.Time) int {
	missing := 1 - l.TokensAt(now)
	if missing <= 0 || l.Limit() <= 0 {
		return 1
	}
	return max(1, int(math.Ceil(missing/float64(l.Limit()))))
}
