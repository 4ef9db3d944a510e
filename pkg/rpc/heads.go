package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	gethrpc "github.com/ethereum/go-ethereum/rpc"
)

// Head is one new head announced by a node: the header fields the push
// source needs to name the height (the block itself is fetched as usual).
// A polled head (heads_poll.go) carries its Number only.
type Head struct {
	Number     uint64
	Hash       string // 0x-prefixed lower case
	ParentHash string
}

// HeadSource streams a chain's new heads (the push source).
type HeadSource interface {
	// SubscribeHeads subscribes to new heads. Heads arrive on heads until
	// the subscription ends: ctx ends, the connection drops, or a head is
	// malformed (a *MalformedError: it is not skipped silently). Then the
	// reason is sent on errs (buffered, exactly one value) and heads is
	// closed, so a reader that sees heads closed finds the reason waiting.
	// err is a failure to subscribe at all.
	SubscribeHeads(ctx context.Context) (heads <-chan Head, errs <-chan error, err error)
}

var _ HeadSource = (*Ethereum)(nil)

// methodNewHeads names the subscription in errors and metrics.
const methodNewHeads = "eth_subscribe(newHeads)"

// headBuffer is the notifications queued between the connection and the
// decoder; the reader of heads should keep up anyway (one head per block).
const headBuffer = 64

// SubscribeHeads subscribes to eth_subscribe("newHeads") on a ws(s)
// endpoint; an http(s) endpoint, which has no subscriptions, is polled
// instead (pollHeads, heads_poll.go). Heads are decoded strictly (number,
// hash and parentHash as hex of the right size). Errors name the
// endpoint, never its URL.
func (e *Ethereum) SubscribeHeads(ctx context.Context) (<-chan Head, <-chan error, error) {
	if e.httpClient != nil {
		return e.pollHeads(ctx)
	}
	if err := e.ensureChain(ctx); err != nil {
		return nil, nil, err
	}
	raw := make(chan json.RawMessage, headBuffer)
	sctx, cancel := context.WithTimeout(ctx, e.cfg.Timeout)
	start := time.Now()
	sub, err := e.client.EthSubscribe(sctx, raw, "newHeads")
	cancel()
	e.metrics.request(e.cfg.ChainID, e.cfg.EndpointName, methodNewHeads, 1, time.Since(start))
	if err != nil {
		return nil, nil, e.subscriptionError(ctx, err)
	}
	heads := make(chan Head)
	errs := make(chan error, 1)
	go func() {
		defer close(heads)
		defer sub.Unsubscribe()
		d := decoder{method: methodNewHeads, endpoint: e.cfg.EndpointName}
		for {
			select {
			case <-ctx.Done():
				errs <- ctx.Err()
				return
			case err := <-sub.Err():
				if err == nil {
					err = errors.New("subscription closed")
				}
				errs <- e.subscriptionError(ctx, err)
				return
			case msg := <-raw:
				h, err := d.decodeHead(msg)
				if err != nil {
					errs <- e.fail(methodNewHeads, err)
					return
				}
				select {
				case heads <- h:
				case <-ctx.Done():
					errs <- ctx.Err()
					return
				}
			}
		}
	}()
	return heads, errs, nil
}

// subscriptionError types a failed or lost subscription: the caller's end
// is returned as it is; a node's JSON-RPC error (subscriptions not
// supported, ...) is a *RequestError; anything else (a lost connection) a
// *TransientError. The text is redacted.
func (e *Ethereum) subscriptionError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	e.forgetChain() // a new subscription checks the chain again
	f := e.classify(ctx, err)
	var rpcErr gethrpc.Error
	if errors.As(err, &rpcErr) || errors.Is(err, gethrpc.ErrNotificationsUnsupported) {
		e.metrics.failure(e.cfg.ChainID, e.cfg.EndpointName, methodNewHeads, KindOther)
		return &RequestError{Method: methodNewHeads, Endpoint: e.cfg.EndpointName, Code: f.code, Err: f.err}
	}
	e.metrics.failure(e.cfg.ChainID, e.cfg.EndpointName, methodNewHeads, KindTransient)
	return &TransientError{Method: methodNewHeads, Endpoint: e.cfg.EndpointName, Attempts: 1, Code: f.code, Err: f.err}
}

// decodeHead checks one newHeads notification.
func (d decoder) decodeHead(raw json.RawMessage) (Head, error) {
	o, err := d.object("", raw)
	if err != nil {
		return Head{}, err
	}
	var h Head
	if h.Number, err = o.quantity("number"); err != nil {
		return Head{}, err
	}
	// Name the height in later errors of this head.
	o.d.height = h.Number
	if h.Hash, err = o.hexBytes("hash", hashLen); err != nil {
		return Head{}, err
	}
	if h.ParentHash, err = o.hexBytes("parentHash", hashLen); err != nil {
		return Head{}, err
	}
	return h, nil
}

// String names a head in logs.
func (h Head) String() string { return fmt.Sprintf("%d %s", h.Number, h.Hash) }
