package rpc

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"go.uber.org/zap"
)

// An endpoint that serves another chain than configured is the worst
// answer a node can give: its blocks look like a reorganisation, and the
// indexer would rewrite the stored chain with them. So when
// EthereumConfig.ExpectedChainID is set, a request goes out only while the
// endpoint is known to serve that chain, and eth_chainId is asked:
//
//   - before the endpoint's first request;
//   - in the same request as every head (eth_blockNumber), every block
//     (eth_getBlockByNumber) and every batch of blocks (FetchBlocks):
//     those answers come with their chain id (receipts are asked by the
//     block's hash and checked against it);
//   - before a reorganisation is repaired (VerifyChain);
//   - again after any failed attempt (a dropped connection is when a load
//     balancer or a restarted node may have put another chain behind the
//     URL), and at least every ChainRecheck (default one minute);
//   - an endpoint that answers another id gets every request refused with
//     a *WrongChainError (never sent), counted in rpc_errors_total as
//     kind "wrong_chain" and shown by rpc_endpoint_wrong_chain, and is
//     asked again after wrongChainRetry: it is used again once it serves
//     the configured chain.
//
// Concurrent requests share one check.

// KindWrongChain is the rpc_errors_total kind of a refused endpoint.
const KindWrongChain = "wrong_chain"

// wrongChainRetry is how long a wrong answer is trusted before the endpoint
// is asked again; requests meanwhile are refused without a call.
const wrongChainRetry = 10 * time.Second

const methodChainID = "eth_chainId"

// WrongChainError refuses a request to an endpoint that serves another
// chain. It is not transient for the client (the request is not retried),
// but the endpoint is asked again later: a caller may retry.
type WrongChainError struct {
	ChainID  string // the configured chain's name
	Endpoint string
	Want     uint64 // ExpectedChainID
	Got      uint64 // what eth_chainId answered
}

func (e *WrongChainError) Error() string {
	return fmt.Sprintf("rpc endpoint %q of chain %q serves chain id %d, not the configured %d (expected_chain_id): it is not used until it serves %d",
		e.Endpoint, e.ChainID, e.Got, e.Want, e.Want)
}

// chainState is what the last check found.
type chainState struct {
	at    time.Time
	wrong *WrongChainError // nil: the right chain
}

// ensureChain returns nil when the endpoint is known to serve the expected
// chain (or none is configured), checking it first if needed.
func (e *Ethereum) ensureChain(ctx context.Context) error {
	if e.cfg.ExpectedChainID == 0 {
		return nil
	}
	now := e.now()
	if s := e.chain.Load(); s != nil {
		switch {
		case s.wrong == nil && now.Sub(s.at) < e.cfg.ChainRecheck:
			return nil
		case s.wrong != nil && now.Sub(s.at) < wrongChainRetry:
			e.metrics.failure(e.cfg.ChainID, e.cfg.EndpointName, methodChainID, KindWrongChain)
			return s.wrong
		}
	}
	return e.checkChainShared(ctx)
}

// checkChainShared is checkChain, one at a time: concurrent callers wait
// for the check in progress and share its outcome.
func (e *Ethereum) checkChainShared(ctx context.Context) error {
	_, err, _ := e.chainCheck.Do("", func() (any, error) { return nil, e.checkChain(ctx) })
	return err
}

// checkChain asks eth_chainId and records the outcome.
func (e *Ethereum) checkChain(ctx context.Context) error {
	var raw json.RawMessage
	_, err := e.attempts(ctx, methodChainID, 0, 1, false, e.cfg.MaxAttempts, func(ctx context.Context) error {
		raw = nil
		return e.client.CallContext(ctx, &raw, methodChainID)
	})
	if err != nil {
		return err
	}
	return e.judgeChainID(ctx, raw, nil)
}

// judgeChainID reads an eth_chainId answer (callErr: the call's own error
// in a batch), records the outcome and returns nil for the expected chain.
func (e *Ethereum) judgeChainID(ctx context.Context, raw json.RawMessage, callErr error) error {
	d := decoder{method: methodChainID, endpoint: e.cfg.EndpointName}
	if callErr != nil {
		return e.callError(ctx, methodChainID, 0, callErr)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return e.fail(methodChainID, d.malformed("result", "expected a hex string, got %s", snippet(raw)))
	}
	got, err := parseQuantity(s)
	if err != nil {
		return e.fail(methodChainID, d.malformed("result", "%v", err))
	}
	st := &chainState{at: e.now()}
	if got != e.cfg.ExpectedChainID {
		st.wrong = &WrongChainError{ChainID: e.cfg.ChainID, Endpoint: e.cfg.EndpointName, Want: e.cfg.ExpectedChainID, Got: got}
		e.metrics.failure(e.cfg.ChainID, e.cfg.EndpointName, methodChainID, KindWrongChain)
		e.log.Error("endpoint serves another chain; not using it", zap.Uint64("expected_chain_id", e.cfg.ExpectedChainID),
			zap.Uint64("answered_chain_id", got))
	} else if prev := e.chain.Load(); prev != nil && prev.wrong != nil {
		e.log.Info("endpoint serves the configured chain again", zap.Uint64("chain_id", got))
	}
	e.metrics.wrongChain(e.cfg.ChainID, e.cfg.EndpointName, st.wrong != nil)
	e.chain.Store(st)
	if st.wrong != nil {
		return st.wrong
	}
	return nil
}

// VerifyChain checks now, whatever was found before, that the endpoint
// serves the expected chain (nil when none is configured). The indexer
// calls it before repairing a reorganisation: another chain behind the URL
// looks exactly like one.
func (e *Ethereum) VerifyChain(ctx context.Context) error {
	if e.cfg.ExpectedChainID == 0 {
		return nil
	}
	return e.checkChainShared(ctx)
}

// ChainVerifier is a Client that can check that it serves the configured
// chain (*Ethereum, *Multi).
type ChainVerifier interface {
	VerifyChain(ctx context.Context) error
}

// VerifyChain runs c's VerifyChain if it has one.
func VerifyChain(ctx context.Context, c Client) error {
	if v, ok := c.(ChainVerifier); ok {
		return v.VerifyChain(ctx)
	}
	return nil
}

// forgetChain makes the next request check the chain again.
func (e *Ethereum) forgetChain() {
	if s := e.chain.Load(); s != nil && s.wrong == nil {
		e.chain.CompareAndSwap(s, nil)
	}
}

func (e *Ethereum) now() time.Time {
	if e.clock != nil {
		return e.clock()
	}
	return time.Now()
}
