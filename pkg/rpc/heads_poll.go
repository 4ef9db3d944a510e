package rpc

import (
	"context"
	"time"
)

// pollBurst caps the heights one poll sends when the head moved by more
// than one since the last poll: the newest pollBurst. Polls come several
// per block, so a larger step means the node itself jumped (it was catching
// up); the heights below are the scans' to start, as with a websocket
// subscription, which announces the new head only.
const pollBurst = 8

// pollHeads is SubscribeHeads for an http(s) endpoint: eth_blockNumber
// every HeadPoll (with the chain check of every request, chain_check.go),
// a Head{Number} for each height above the last one sent. Many providers
// serve http only, and a poll a fraction of a block time apart is what
// lets a follower start each new height within that fraction instead of
// waiting for the next HeadScan.
//
//   - The first poll of a client sends the head it reads; a subscription
//     renewed later (after a failure, or a silence of stall_after) goes on
//     above the last height sent, so a chain that stopped is not announced
//     again at every renewal.
//   - A head lower than the last one sent (a replica behind a load
//     balancer that lags) sends nothing: heights never go backwards here.
//   - The first poll is the subscription: its failure is returned as err.
//     A later failed poll (after the request's own retries) ends the
//     subscription with that error, as a lost websocket does; the caller
//     subscribes again.
func (e *Ethereum) pollHeads(ctx context.Context) (<-chan Head, <-chan error, error) {
	first, err := e.HeadHeight(ctx)
	if err != nil {
		return nil, nil, err
	}
	heads := make(chan Head)
	errs := make(chan error, 1)
	go func() {
		defer close(heads)
		t := time.NewTicker(e.cfg.HeadPoll)
		defer t.Stop()
		h := first
		for {
			if err := e.sendPolled(ctx, heads, h); err != nil {
				errs <- err
				return
			}
			select {
			case <-ctx.Done():
				errs <- ctx.Err()
				return
			case <-t.C:
			}
			if h, err = e.HeadHeight(ctx); err != nil {
				if ctx.Err() != nil {
					err = ctx.Err()
				}
				errs <- err
				return
			}
		}
	}()
	return heads, errs, nil
}

// sendPolled sends the heights that head h newly announces (see
// pollHeads), in order, and records each once it is taken.
func (e *Ethereum) sendPolled(ctx context.Context, heads chan<- Head, h uint64) error {
	next := e.polled.Load() // the height above the last one sent, 0 before any
	from := h
	if next > 0 {
		if h < next {
			return nil
		}
		from = max(next, h-min(h, pollBurst-1))
	}
	for n := from; n <= h; n++ {
		select {
		case heads <- Head{Number: n}:
		case <-ctx.Done():
			return ctx.Err()
		}
		e.polled.Store(n + 1)
	}
	return nil
}
