package rpc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/chaindata"
)

// NamedClient is one endpoint of a Multi: a single-endpoint client (usually
// an *Ethereum) and the name that stands for it in errors, logs and metric
// labels. Multi never sees the endpoint's URL.
type NamedClient struct {
	Name   string
	Client Client
}

// MultiOptions configures a Multi. Zero values take the defaults.
type MultiOptions struct {
	// An endpoint whose call fails at the transport level is skipped for
	// Cooldown, doubled at each further failure (a call made after the
	// cooldown ended), capped at MaxCooldown. Defaults 5s and 5m.
	Cooldown    time.Duration
	MaxCooldown time.Duration
	// HeadTimeout bounds HeadHeight: endpoints that have not answered by
	// then are not waited for (and count as failed). Default 5s.
	HeadTimeout time.Duration
	// MaxHeadSkew is how far (in blocks) an endpoint's head may be above the
	// median of the other endpoints' heads and still be believed. Default
	// 1000.
	MaxHeadSkew uint64
	// Now is the clock for cooldowns; nil means time.Now. For tests.
	Now func() time.Time
}

func (o *MultiOptions) setDefaults() {
	if o.Cooldown <= 0 {
		o.Cooldown = 5 * time.Second
	}
	if o.MaxCooldown <= 0 {
		o.MaxCooldown = 5 * time.Minute
	}
	if o.MaxCooldown < o.Cooldown {
		o.MaxCooldown = o.Cooldown
	}
	if o.HeadTimeout <= 0 {
		o.HeadTimeout = 5 * time.Second
	}
	if o.MaxHeadSkew == 0 {
		o.MaxHeadSkew = 1000
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// Multi is a Client over several endpoints of one chain. Endpoints are
// preferred in the order given; one whose calls fail at the transport level
// cools down (is skipped) for a while. BlockByHeight and Receipts fail over
// to the next endpoint on any error; HeadHeight asks all endpoints at once
// and disbelieves a head far above the others'. It is safe for concurrent
// use.
type Multi struct {
	chainID string
	opts    MultiOptions
	eps     []*endpoint
	log     *zap.Logger
	metrics *Metrics

	mu sync.Mutex // guards the endpoints' health and the sources below
	// sources remembers which endpoint served a block (by hash), so that its
	// receipts are asked there first: that node surely knows the block.
	sources    map[string]int
	sourceRing []string
	sourceNext int

	closeOnce sync.Once
}

var _ Client = (*Multi)(nil)

// sourceMemory is how many block hashes Multi remembers the source of.
const sourceMemory = 1024

type endpoint struct {
	idx    int
	name   string
	client Client

	// Guarded by Multi.mu.
	failures      int       // consecutive transport failures
	until         time.Time // skipped before this instant
	down          bool      // the last outcome was a transport failure
	disbelieved   bool      // the last head it reported was not believed
	disbelievedAt time.Time // when its head was last not believed
}

// AllFailedError is returned when every endpoint tried failed. It unwraps to
// the error of the first endpoint tried (the preferred one), so errors.Is
// and errors.As see that error's type: a *TransientError, a
// *MalformedError, ErrBlockNotFound... Errs holds every endpoint's error in
// the order tried.
type AllFailedError struct {
	ChainID string
	Method  string // Client method: HeadHeight, BlockByHeight, Receipts
	Errs    []EndpointError
}

// EndpointError is one endpoint's failure within an AllFailedError.
type EndpointError struct {
	Endpoint string
	Err      error
}

func (e *AllFailedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "rpc chain %q: %s failed on all %d endpoints: %v", e.ChainID, e.Method, len(e.Errs), e.Errs[0].Err)
	for _, x := range e.Errs[1:] {
		fmt.Fprintf(&b, "; then %v", x.Err)
	}
	return b.String()
}

func (e *AllFailedError) Unwrap() error { return e.Errs[0].Err }

// NewMulti builds a Multi over endpoints, preferred in the order given.
// Multi takes ownership of the clients: Close closes them. logger and m may
// be nil.
func NewMulti(chainID string, endpoints []NamedClient, opts MultiOptions, logger *zap.Logger, m *Metrics) (*Multi, error) {
	if len(endpoints) == 0 {
		return nil, fmt.Errorf("rpc chain %q: no endpoint given", chainID)
	}
	opts.setDefaults()
	if logger == nil {
		logger = zap.NewNop()
	}
	mc := &Multi{
		chainID:    chainID,
		opts:       opts,
		log:        logger.With(zap.String("chain_id", chainID)),
		metrics:    m,
		sources:    make(map[string]int),
		sourceRing: make([]string, sourceMemory),
	}
	seen := make(map[string]bool)
	for i, nc := range endpoints {
		switch {
		case nc.Name == "":
			return nil, fmt.Errorf("rpc chain %q: endpoint %d has no name (the URL is never shown)", chainID, i)
		case seen[nc.Name]:
			return nil, fmt.Errorf("rpc chain %q: endpoint name %q given twice", chainID, nc.Name)
		case nc.Client == nil:
			return nil, fmt.Errorf("rpc chain %q: endpoint %q has no client", chainID, nc.Name)
		}
		seen[nc.Name] = true
		mc.eps = append(mc.eps, &endpoint{idx: i, name: nc.Name, client: nc.Client})
		m.endpointHealthy(chainID, nc.Name, true)
	}
	return mc, nil
}

// Close closes every endpoint's client.
func (m *Multi) Close() {
	m.closeOnce.Do(func() {
		for _, ep := range m.eps {
			ep.client.Close()
		}
	})
}

// Healthy returns the names of the endpoints not cooling down, in order of
// preference.
func (m *Multi) Healthy() []string {
	now := m.opts.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	var names []string
	for _, ep := range m.eps {
		if !now.Before(ep.until) {
			names = append(names, ep.name)
		}
	}
	return names
}

// BlockByHeight asks the preferred endpoint, then the others in turn if it
// fails (a lagging node answers ErrBlockNotFound, another may have the
// block; a malformed answer may be one node's fault).
func (m *Multi) BlockByHeight(ctx context.Context, height uint64) (*chaindata.BlockData, error) {
	var data *chaindata.BlockData
	ep, err := m.failover(ctx, "BlockByHeight", height, -1, func(c Client) error {
		d, err := c.BlockByHeight(ctx, height)
		data = d
		return err
	})
	if err != nil {
		return nil, err
	}
	if data != nil {
		m.remember(data.Block.Hash, ep.idx)
	}
	return data, nil
}

// Receipts asks first the endpoint that served the block, then the others.
// Receipts are asked by block hash and checked against data.Block.Hash by
// the endpoint's client, so an endpoint on another fork answers
// ErrBlockNotFound or a *MalformedError, never receipts of another block.
func (m *Multi) Receipts(ctx context.Context, data *chaindata.BlockData) error {
	_, err := m.failover(ctx, "Receipts", data.Block.Number, m.sourceOf(data.Block.Hash), func(c Client) error {
		return c.Receipts(ctx, data)
	})
	return err
}

// failover calls call on each endpoint in order of preference (prefer, an
// endpoint index, first if it is not cooling down) until one succeeds.
func (m *Multi) failover(ctx context.Context, method string, height uint64, prefer int, call func(Client) error) (*endpoint, error) {
	eps := m.order(prefer)
	var errs []EndpointError
	for i, ep := range eps {
		err := call(ep.client)
		if err == nil {
			m.observe(ep, nil)
			return ep, nil
		}
		if ctx.Err() != nil {
			// The caller gave up: neither the endpoint's fault nor a reason
			// to ask another one.
			return nil, err
		}
		m.observe(ep, err)
		errs = append(errs, EndpointError{ep.name, err})
		if i+1 < len(eps) {
			m.log.Debug("rpc call failed; trying the next endpoint", zap.String("method", method),
				zap.Uint64("height", height), zap.String("endpoint", ep.name),
				zap.String("next", eps[i+1].name), zap.Error(err))
		}
	}
	return nil, m.allFailed(method, errs)
}

func (m *Multi) allFailed(method string, errs []EndpointError) error {
	if len(errs) == 1 {
		return errs[0].Err
	}
	return &AllFailedError{ChainID: m.chainID, Method: method, Errs: errs}
}

// order returns the endpoints not cooling down in order of preference, the
// one of index prefer first; if all are cooling down, all of them, the
// soonest back first.
func (m *Multi) order(prefer int) []*endpoint {
	now := m.opts.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*endpoint, 0, len(m.eps))
	for _, ep := range m.eps {
		if !now.Before(ep.until) {
			out = append(out, ep)
		}
	}
	if len(out) == 0 {
		out = append(out, m.eps...)
		sort.SliceStable(out, func(i, j int) bool { return out[i].until.Before(out[j].until) })
	}
	if prefer >= 0 {
		if i := slices.IndexFunc(out, func(ep *endpoint) bool { return ep.idx == prefer }); i > 0 {
			ep := out[i]
			copy(out[1:i+1], out[:i])
			out[0] = ep
		}
	}
	return out
}

// observe updates ep's health from the outcome of a call: a transport
// failure starts a cooldown; an answer (data, or "not found") ends it. A
// malformed answer or a rejected request says nothing about reachability.
func (m *Multi) observe(ep *endpoint, err error) {
	switch {
	case err == nil, errors.Is(err, ErrBlockNotFound):
		m.recovered(ep)
	case endpointFault(err):
		m.fault(ep, err)
	}
}

// endpointFault reports whether err says the endpoint itself is not usable
// now: transient failures (timeouts, connection errors, 429/5xx after
// retries), another chain behind the URL, and HTTP 401/403/404, which
// reject every request (an expired API key, a wrong path).
func endpointFault(err error) bool {
	var ne net.Error
	var re *RequestError
	var wc *WrongChainError
	switch {
	case IsTransient(err), errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne), errors.As(err, &wc):
		return true
	case errors.As(err, &re):
		switch re.HTTPStatus {
		case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound:
			return true
		}
	}
	return false
}

func (m *Multi) fault(ep *endpoint, err error) {
	now := m.opts.Now()
	m.mu.Lock()
	if now.Before(ep.until) {
		// Already cooling down: a call that started before. Do not stretch
		// the cooldown once per call in flight.
		m.mu.Unlock()
		return
	}
	ep.failures++
	cooldown := m.opts.Cooldown
	for i := 1; i < ep.failures && cooldown < m.opts.MaxCooldown; i++ {
		cooldown *= 2
	}
	cooldown = min(cooldown, m.opts.MaxCooldown)
	ep.until = now.Add(cooldown)
	ep.down = true
	failures := ep.failures
	m.mu.Unlock()
	m.metrics.endpointHealthy(m.chainID, ep.name, false)
	m.log.Warn("rpc endpoint failing; skipped while it cools down", zap.String("endpoint", ep.name),
		zap.Int("consecutive_failures", failures), zap.Duration("cooldown", cooldown), zap.Error(err))
}

func (m *Multi) recovered(ep *endpoint) {
	m.mu.Lock()
	was := ep.down
	ep.failures = 0
	ep.until = time.Time{}
	ep.down = false
	m.mu.Unlock()
	if was {
		m.metrics.endpointHealthy(m.chainID, ep.name, true)
		m.log.Info("rpc endpoint answering again", zap.String("endpoint", ep.name))
	}
}

func (m *Multi) remember(hash string, idx int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.sources[hash]; !ok {
		if old := m.sourceRing[m.sourceNext]; old != "" {
			delete(m.sources, old)
		}
		m.sourceRing[m.sourceNext] = hash
		m.sourceNext = (m.sourceNext + 1) % len(m.sourceRing)
	}
	m.sources[hash] = idx
}

func (m *Multi) sourceOf(hash string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if idx, ok := m.sources[hash]; ok {
		return idx
	}
	return -1
}

// VerifyChain checks every endpoint's chain now (see Ethereum.VerifyChain).
// An endpoint that serves another chain cools down like a failed one and
// its *WrongChainError is returned, so that the caller does not act on
// what it may have answered; an endpoint that cannot be asked now is left
// to its next request's check.
func (m *Multi) VerifyChain(ctx context.Context) error {
	var first error
	for _, ep := range m.eps {
		err := VerifyChain(ctx, ep.client)
		var wc *WrongChainError
		if errors.As(err, &wc) {
			m.fault(ep, err)
			if first == nil {
				first = err
			}
		}
	}
	return first
}
