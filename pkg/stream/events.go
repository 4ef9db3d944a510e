package stream

import (
	"context"
	"fmt"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/storage"
)

// The change stream's events as consumers receive them (the query API
// serves them over SSE and websockets, webhooks deliver the same objects):
// the stored events the Appender wrote, each "block added" with what the
// consumer asked to have of its block.

// Event types.
const (
	EventBlockAdded   = "block_added"
	EventBlockRemoved = "block_removed"
)

// Event is one event of a chain's change stream.
type Event struct {
	Seq     uint64     `json:"seq"`
	Type    string     `json:"type"` // block_added or block_removed
	ChainID string     `json:"chain_id"`
	Block   EventBlock `json:"block"`
	// Orphaned marks a block_added event whose block a later event of
	// the stream removes: its rows are no longer served, so it carries
	// none of them.
	Orphaned bool `json:"orphaned,omitempty"`
	// What the request's include asked for (block_added only): absent
	// when not asked for, an empty list when the block has none.
	Transactions   *[]Transaction   `json:"transactions,omitempty"`
	Logs           *[]Log           `json:"logs,omitempty"`
	TokenTransfers *[]TokenTransfer `json:"token_transfers,omitempty"`
	Traces         *[]InternalTx    `json:"traces,omitempty"`
}

// EventBlock is the block an event adds or removes.
type EventBlock struct {
	Number     uint64 `json:"number"`
	Hash       string `json:"hash"`
	ParentHash string `json:"parent_hash"`
	Timestamp  uint64 `json:"timestamp"`
}

// Include is what block_added events carry besides the block.
type Include struct {
	Transactions, Logs, TokenTransfers, Traces bool
}

func (in Include) any() bool { return in.Transactions || in.Logs || in.TokenTransfers || in.Traces }

// ParseInclude reads a comma-separated list of transactions, logs,
// token_transfers and traces.
func ParseInclude(s string) (Include, error) {
	var in Include
	if s == "" {
		return in, nil
	}
	for _, w := range strings.Split(s, ",") {
		switch strings.TrimSpace(w) {
		case "transactions":
			in.Transactions = true
		case "logs":
			in.Logs = true
		case "token_transfers":
			in.TokenTransfers = true
		case "traces":
			in.Traces = true
		default:
			return in, fmt.Errorf("include: %q is not transactions, logs, token_transfers or traces", strings.TrimSpace(w))
		}
	}
	return in, nil
}

// Source is what reading the stream needs (*storage.StreamReader).
type Source interface {
	StreamEvents(ctx context.Context, chainID string, after uint64, limit int) ([]storage.StreamEvent, error)
	StreamTail(ctx context.Context, chainID string, n int) ([]storage.StreamEvent, error)
	StreamSeqOfHeight(ctx context.Context, chainID string, height uint64) (uint64, bool, error)
	BlockTimes(ctx context.Context, chainID string, heights []uint64) (map[uint64]storage.BlockTime, error)
	TransactionsInRange(ctx context.Context, chainID string, from, to uint64) ([]chaindata.Transaction, error)
	LogsInRange(ctx context.Context, chainID string, from, to uint64) ([]chaindata.Log, error)
	TransfersInRange(ctx context.Context, chainID string, from, to uint64) ([]storage.TokenTransfer, error)
	FramesInRange(ctx context.Context, chainID string, from, to uint64) ([]chaindata.Trace, error)
}

var _ Source = (*storage.StreamReader)(nil)

// maxEventSpan bounds the heights one page of events covers, so that the
// rows read for it stay a page's worth: a page ends early where the next
// event is further away (a jump back after a deep reorganisation).
const maxEventSpan = 256

// ReadEvents returns up to limit events of the chain after seq, with what
// inc asks for.
func ReadEvents(ctx context.Context, st Source, chainID string, after uint64, limit int, inc Include) ([]Event, error) {
	stored, err := st.StreamEvents(ctx, chainID, after, limit)
	if err != nil || len(stored) == 0 {
		return nil, err
	}
	lo, hi := stored[0].Number, stored[0].Number
	for i, e := range stored {
		nlo, nhi := min(lo, e.Number), max(hi, e.Number)
		if nhi-nlo >= maxEventSpan {
			stored = stored[:i]
			break
		}
		lo, hi = nlo, nhi
	}
	out := make([]Event, len(stored))
	var added []uint64
	for i, e := range stored {
		out[i] = Event{Seq: e.Seq, Type: EventBlockAdded, ChainID: chainID,
			Block: EventBlock{Number: e.Number, Hash: e.Hash, ParentHash: e.ParentHash, Timestamp: e.Timestamp}}
		if e.Kind == storage.StreamRemoved {
			out[i].Type = EventBlockRemoved
		} else {
			added = append(added, e.Number)
		}
	}
	if len(added) == 0 {
		return out, nil
	}
	canon, err := st.BlockTimes(ctx, chainID, added)
	if err != nil {
		return nil, err
	}
	for i := range out {
		if out[i].Type == EventBlockAdded && canon[out[i].Block.Number].Hash != out[i].Block.Hash {
			out[i].Orphaned = true
		}
	}
	if !inc.any() {
		return out, nil
	}
	rows, err := readRows(ctx, st, chainID, lo, hi, inc)
	if err != nil {
		return nil, err
	}
	for i := range out {
		if out[i].Type == EventBlockAdded && !out[i].Orphaned {
			rows.attach(&out[i], inc)
		}
	}
	return out, nil
}

// blockRows are a range's canonical rows by block hash.
type blockRows struct {
	txs       map[string][]Transaction
	logs      map[string][]Log
	transfers map[string][]TokenTransfer
	frames    map[string][]InternalTx
}

func readRows(ctx context.Context, st Source, chainID string, lo, hi uint64, inc Include) (*blockRows, error) {
	r := &blockRows{txs: map[string][]Transaction{}, logs: map[string][]Log{},
		transfers: map[string][]TokenTransfer{}, frames: map[string][]InternalTx{}}
	g, gctx := errgroup.WithContext(ctx)
	if inc.Transactions {
		g.Go(func() error {
			txs, err := st.TransactionsInRange(gctx, chainID, lo, hi)
			for _, tx := range txs {
				r.txs[tx.BlockHash] = append(r.txs[tx.BlockHash], TransactionOf(tx))
			}
			return err
		})
	}
	if inc.Logs {
		g.Go(func() error {
			logs, err := st.LogsInRange(gctx, chainID, lo, hi)
			for _, l := range logs {
				r.logs[l.BlockHash] = append(r.logs[l.BlockHash], LogOf(l))
			}
			return err
		})
	}
	if inc.TokenTransfers {
		g.Go(func() error {
			ts, err := st.TransfersInRange(gctx, chainID, lo, hi)
			for _, t := range ts {
				r.transfers[t.BlockHash] = append(r.transfers[t.BlockHash], TransferOf(t))
			}
			return err
		})
	}
	if inc.Traces {
		g.Go(func() error {
			fs, err := st.FramesInRange(gctx, chainID, lo, hi)
			for _, f := range fs {
				r.frames[f.BlockHash] = append(r.frames[f.BlockHash], InternalTxOf(f))
			}
			return err
		})
	}
	return r, g.Wait()
}

// attach gives the event its block's rows, an empty list for what was
// asked for and is not there.
func (r *blockRows) attach(e *Event, inc Include) {
	h := e.Block.Hash
	if inc.Transactions {
		v := append([]Transaction{}, r.txs[h]...)
		e.Transactions = &v
	}
	if inc.Logs {
		v := append([]Log{}, r.logs[h]...)
		e.Logs = &v
	}
	if inc.TokenTransfers {
		v := append([]TokenTransfer{}, r.transfers[h]...)
		e.TokenTransfers = &v
	}
	if inc.Traces {
		v := append([]InternalTx{}, r.frames[h]...)
		e.Traces = &v
	}
}
