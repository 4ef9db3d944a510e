package api

import (
	"context"
	"sync"
	"time"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/storage"
	"github.com/tideline-dev/tideline/pkg/stream"
)

// view is what a request may serve of a chain: heights from Lowest to
// Watermark. Lowest is the start height, or the height above the pruned
// one; nothing above the watermark is served, so no half-written block
// is ever seen (marks are written after the rows they mark).
type view struct {
	Watermark    uint64
	HasWatermark bool
	Pruned       uint64
	HasPruned    bool
	Aggregator   uint64
	HasAggr      bool
	Start        uint64
}

// Lowest is the lowest height served.
func (v view) Lowest() uint64 { return storage.Floor(v.Start, v.Pruned, v.HasPruned) }

// IsPruned tells whether retention removed height h.
func (v view) IsPruned(h uint64) bool { return v.HasPruned && h <= v.Pruned }

// Serves tells whether h is in [Lowest, Watermark].
func (v view) Serves(h uint64) bool { return v.HasWatermark && h >= v.Lowest() && h <= v.Watermark }

// views caches each chain's view for api.state_refresh, so a busy API
// reads chain_state and the marks above the watermark about once a second
// per chain, not once per request. A cached view is at most that old: its
// watermark is then lower than the truth, never higher, which is safe.
type views struct {
	store   ChainStore
	refresh time.Duration
	now     func() time.Time

	mu     sync.Mutex
	chains map[string]*cachedView
}

type cachedView struct {
	mu         sync.Mutex
	v          view
	at         time.Time
	good       bool
	refreshing bool          // a request is reading the view again
	done       chan struct{} // closed when that read ends
}

func newViews(store ChainStore, refresh time.Duration) *views {
	return &views{store: store, refresh: refresh, now: time.Now, chains: map[string]*cachedView{}}
}

// get returns the chain's view, read again when older than the refresh.
// One request reads it; the others meanwhile keep using the previous view
// (lower than the truth, never higher), or wait for the read when there
// is none yet.
func (vs *views) get(ctx context.Context, chainID string, start uint64) (view, error) {
	if vs.refresh <= 0 {
		return vs.read(ctx, chainID, start)
	}
	vs.mu.Lock()
	c := vs.chains[chainID]
	if c == nil {
		c = &cachedView{}
		vs.chains[chainID] = c
	}
	vs.mu.Unlock()

	// Waits for another request's read of the view (one at a time per
	// chain), not a retry: a failed read is its own request's error.
	for {
		c.mu.Lock()
		if c.good && vs.now().Sub(c.at) < vs.refresh {
			v := c.v
			c.mu.Unlock()
			return v, nil
		}
		if c.refreshing {
			if c.good {
				v := c.v
				c.mu.Unlock()
				return v, nil
			}
			done := c.done
			c.mu.Unlock()
			select {
			case <-done:
				continue
			case <-ctx.Done():
				return view{}, &storage.TimeoutError{What: "waiting for the chain state of " + chainID, Err: ctx.Err()}
			}
		}
		c.refreshing, c.done = true, make(chan struct{})
		c.mu.Unlock()

		v, err := vs.read(ctx, chainID, start)
		c.mu.Lock()
		if err == nil {
			c.v, c.at, c.good = v, vs.now(), true
		}
		c.refreshing = false
		close(c.done)
		c.mu.Unlock()
		return v, err
	}
}

// fresh reads the view without the cache: a 404 is only answered after
// checking that the height was not pruned meanwhile (it would be a 410).
func (vs *views) fresh(ctx context.Context, chainID string, start uint64) (view, error) {
	return vs.read(ctx, chainID, start)
}

func (vs *views) read(ctx context.Context, chainID string, start uint64) (view, error) {
	st, err := vs.store.ReadState(ctx, chainID)
	if err != nil {
		return view{}, err
	}
	v := view{
		Pruned: st.PrunedHeight, HasPruned: st.HasPruned,
		Aggregator: st.AggregatorHeight, HasAggr: st.HasAggregator,
		Start: start,
	}
	from := v.Lowest()
	if st.HasWatermark && st.Watermark < from {
		// The saved watermark is below what retention kept: look above it.
		st.HasWatermark = false
	}
	v.Watermark, v.HasWatermark, err = vs.store.ReadWatermark(ctx, chainID, from, st)
	if err != nil {
		return view{}, err
	}
	return v, nil
}

// Store is what the API reads, one view per surface, each a view of
// *storage.Reader (NewStore); none has a write method (pkg/storage's
// README says what each read does).
type Store struct {
	Chain  ChainStore    // blocks, transactions, logs, the watermark, aggregates
	Tokens TokenStore    // transfers, balances, metadata (types_tokens.go)
	Traces TraceStore    // call traces (routes_traces.go, etherscan_internal.go)
	Stream stream.Source // the change stream (stream.go, stream_transport.go here; pkg/storage/stream.go its rows)
	Keys   KeyStore      // the API keys (keys.go)
	RPC    RPCStore      // the JSON-RPC route's own reads (jsonrpc_batch.go, jsonrpc_ots_search.go)
}

// NewStore is the API's Store over one Reader.
func NewStore(r *storage.Reader) Store {
	return Store{Chain: r, Tokens: r.Tokens(), Traces: r.Traces(), Stream: r.Stream(), Keys: r.Records(), RPC: r.RPC()}
}

// ChainStore reads the chain's own rows (*storage.Reader).
type ChainStore interface {
	ReadState(ctx context.Context, chainID string) (storage.State, error)
	ReadWatermark(ctx context.Context, chainID string, start uint64, st storage.State) (uint64, bool, error)
	BlocksInRange(ctx context.Context, chainID string, from, to uint64) ([]chaindata.Block, error)
	BlocksAt(ctx context.Context, chainID string, heights []uint64) ([]chaindata.Block, error)
	BlockTimes(ctx context.Context, chainID string, heights []uint64) (map[uint64]storage.BlockTime, error)
	TransactionFees(ctx context.Context, chainID string, ps []storage.Position) (map[storage.Position]storage.TxFee, error)
	BlockHeightsByHash(ctx context.Context, chainID, hash string, lo, hi uint64) ([]uint64, error)
	BlockAtTime(ctx context.Context, chainID string, t uint64, last bool, lo, hi uint64) (height, timestamp uint64, found bool, err error)
	TxPositionsByHash(ctx context.Context, chainID, hash string, lo, hi uint64) ([]storage.Position, error)
	TransactionsAt(ctx context.Context, chainID string, ps []storage.Position) ([]chaindata.Transaction, error)
	BlockTransactions(ctx context.Context, chainID string, height uint64, from uint32, limit int) ([]chaindata.Transaction, error)
	AddressTxPositions(ctx context.Context, chainID string, q storage.AddressTxQuery) ([]storage.Position, error)
	Logs(ctx context.Context, chainID string, q storage.LogQuery) ([]chaindata.Log, error)
	TxLogs(ctx context.Context, chainID string, p storage.Position) ([]chaindata.Log, error)
	AggregatesAt(ctx context.Context, chainID string, heights []uint64) (map[uint64]storage.AggregateRow, error)
}

// TraceStore reads call traces (*storage.TraceReader).
type TraceStore interface {
	TxTraces(ctx context.Context, chainID string, p storage.Position) ([]chaindata.Trace, error)
	BlockTraces(ctx context.Context, chainID string, height uint64) ([]chaindata.Trace, error)
	TracedHeights(ctx context.Context, chainID string, heights []uint64) (map[uint64]bool, error)
	AddressTracePositions(ctx context.Context, chainID string, q storage.AddressTraceQuery) ([]storage.TracePosition, error)
	TracesAt(ctx context.Context, chainID string, ps []storage.TracePosition) ([]chaindata.Trace, error)
	TracesInRange(ctx context.Context, chainID string, q storage.TraceRangeQuery) ([]chaindata.Trace, error)
}

// RPCStore is the JSON-RPC route's own reads (*storage.RPCReader).
type RPCStore interface {
	SenderNonceTx(ctx context.Context, chainID, sender string, nonce, from, to uint64) ([]chaindata.Transaction, error)
	TxPositionsByHashes(ctx context.Context, chainID string, hashes []string, lo, hi uint64) (map[string][]storage.Position, error)
	LogsOfTxs(ctx context.Context, chainID string, ps []storage.Position) ([]chaindata.Log, error)
	ReceiptTxsAt(ctx context.Context, chainID string, ps []storage.Position) ([]chaindata.Transaction, error)
}

// KeyStore reads the API keys (*storage.RecordReader).
type KeyStore interface {
	APIKeys(ctx context.Context) ([]storage.APIKeyRecord, error)
}

var (
	_ ChainStore = (*storage.Reader)(nil)
	_ TokenStore = (*storage.TokenReader)(nil)
	_ TraceStore = (*storage.TraceReader)(nil)
	_ KeyStore   = (*storage.RecordReader)(nil)
	_ RPCStore   = (*storage.RPCReader)(nil)
)
