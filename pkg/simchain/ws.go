package simchain

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	gethrpc "github.com/ethereum/go-ethereum/rpc"
)

// The websocket side runs on go-ethereum's rpc server, which brings the
// subscription protocol; its methods answer through the same renderer as
// HTTP. Fault rates apply to HTTP only (Latency applies to both): the
// websocket serves the push source, whose faults are dropped connections,
// which a test makes by closing the chain.

type wsEth struct{ s *Sim }

func (e *wsEth) ChainId() (json.RawMessage, error)     { return e.s.callWS("eth_chainId") }
func (e *wsEth) BlockNumber() (json.RawMessage, error) { return e.s.callWS("eth_blockNumber") }
func (e *wsEth) Syncing() (json.RawMessage, error)     { return e.s.callWS("eth_syncing") }

func (e *wsEth) GetBlockByNumber(n json.RawMessage, full *bool) (json.RawMessage, error) {
	return e.s.callWS("eth_getBlockByNumber", n, boolArg(full))
}

func (e *wsEth) GetBlockByHash(h json.RawMessage, full *bool) (json.RawMessage, error) {
	return e.s.callWS("eth_getBlockByHash", h, boolArg(full))
}

func (e *wsEth) GetBlockReceipts(b json.RawMessage) (json.RawMessage, error) {
	return e.s.callWS("eth_getBlockReceipts", b)
}

func (e *wsEth) GetTransactionReceipt(h json.RawMessage) (json.RawMessage, error) {
	return e.s.callWS("eth_getTransactionReceipt", h)
}

func (e *wsEth) GetTransactionByHash(h json.RawMessage) (json.RawMessage, error) {
	return e.s.callWS("eth_getTransactionByHash", h)
}

// NewHeads is eth_subscribe("newHeads").
func (e *wsEth) NewHeads(ctx context.Context) (*gethrpc.Subscription, error) {
	n, ok := gethrpc.NotifierFromContext(ctx)
	if !ok {
		return nil, gethrpc.ErrNotificationsUnsupported
	}
	sub := n.CreateSubscription()
	e.s.heads.add(sub, n)
	return sub, nil
}

type wsNet struct{ s *Sim }

func (n *wsNet) Version() (json.RawMessage, error) { return n.s.callWS("net_version") }

func boolArg(b *bool) json.RawMessage {
	if b != nil && *b {
		return json.RawMessage("true")
	}
	return json.RawMessage("false")
}

func (s *Sim) callWS(method string, params ...json.RawMessage) (json.RawMessage, error) {
	if !s.wait(context.Background(), s.cfg.Latency) {
		return nil, errors.New("simchain: closed")
	}
	rd := renderer{v: s.chain.view(), p: s.chain.pools, chainID: s.cfg.ChainID}
	buf := bufPool.Get().(*[]byte)
	defer putBuf(buf)
	out, err := rd.appendCall((*buf)[:0], method, params, false)
	if err != nil {
		return nil, err
	}
	*buf = out
	// The server encodes the result after this returns, and buf goes back
	// to the pool: hand it a copy.
	return json.RawMessage(append([]byte(nil), out...)), nil
}

// announcer sends newHeads notifications: every new height up to
// maxAnnounced at a time (a Jump sends only the newest), and after a reorg
// the new blocks from the fork up, as a node announces its new canonical
// chain.
type announcer struct {
	s    *Sim
	wake chan struct{}

	mu   sync.Mutex
	subs map[gethrpc.ID]*gethrpc.Notifier
}

const (
	maxAnnounced = 16
	// pollEvery bounds how late a head is announced when the clock is not
	// the wall clock (tests move a fake clock without telling anyone).
	pollEvery = 100 * time.Millisecond
)

func newAnnouncer(s *Sim) *announcer {
	return &announcer{s: s, wake: make(chan struct{}, 1), subs: map[gethrpc.ID]*gethrpc.Notifier{}}
}

func (a *announcer) add(sub *gethrpc.Subscription, n *gethrpc.Notifier) {
	a.mu.Lock()
	a.subs[sub.ID] = n
	a.mu.Unlock()
	go func() {
		select {
		case <-sub.Err():
		case <-a.s.closed:
		}
		a.mu.Lock()
		delete(a.subs, sub.ID)
		a.mu.Unlock()
	}()
}

func (a *announcer) poke() {
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

func (a *announcer) run() {
	c := a.s.chain
	v := c.view()
	last, reorgs := v.head, len(v.st.reorgs)
	b := new(block)
	var buf []byte
	for {
		t := time.NewTimer(a.untilNextBlock())
		select {
		case <-a.s.closed:
			t.Stop()
			return
		case <-a.wake:
		case <-t.C:
		}
		t.Stop()
		v = c.view()
		from := last + 1
		if n := len(v.st.reorgs); n != reorgs {
			for _, r := range v.st.reorgs[reorgs:] {
				from = min(from, r.fork+1)
			}
			reorgs = n
		}
		if v.head < from {
			continue
		}
		if v.head-from >= maxAnnounced {
			from = v.head - maxAnnounced + 1
		}
		last = v.head
		rd := renderer{v: v, p: c.pools, chainID: a.s.cfg.ChainID}
		for h := from; h <= v.head; h++ {
			v.build(b, h)
			buf = rd.appendBlock(buf[:0], b, false, true, false)
			a.notify(json.RawMessage(append([]byte(nil), buf...)))
		}
	}
}

func (a *announcer) untilNextBlock() time.Duration {
	c := a.s.chain
	since := c.now().Sub(c.start)
	d := c.cfg.BlockTime - since%c.cfg.BlockTime
	if since < 0 {
		d = -since
	}
	return min(max(d, time.Millisecond), pollEvery)
}

func (a *announcer) notify(head json.RawMessage) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for id, n := range a.subs {
		// An error means the connection is gone; its Err channel will
		// remove it.
		_ = n.Notify(id, head)
	}
}
