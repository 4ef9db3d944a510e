package storage

import (
	"context"
)

// Views: one pool of connections (db), and per consumer a type with the
// handful of methods it needs, each embedding the pool. Private helpers
// live on *db, so every view can use them; exported methods live on one
// view each, so no view carries another's. Two views that both need a
// method embed the small view that owns it (Progress, mutations,
// RecordReader, StreamReader) instead of writing it twice.
//
//	opened by Open (the indexer)      opened by OpenReader (the query API)
//	ClickHouse: write path, Progress  Reader: blocks, transactions, logs
//	  .Records()    Records            .Records()   RecordReader
//	  .Aggregates() Aggregates         .Tokens()    TokenReader
//	  .Retention()  Retention          .Traces()    TraceReader
//	  .Tokens()     Tokens             .Stream()    StreamReader
//	                                   .RPC()       RPCReader
//	  .Traces()     Traces
//	  .Stream()     Stream
//	  .Reader()     Reader
//
// TestNoViewIsLarge holds every exported type of the package to 21 methods.

// Progress answers how far a chain is indexed (heights.go, heights_scan.go)
// and keeps its per-chain values (state.go): the scans', the scheduler's
// and every side job's questions.
type Progress struct{ *db }

// mutations counts the server's unfinished deletions, which both a
// chain's removal (Records) and pruning (Retention) wait for.
type mutations struct{ *db }

// Records are the operator's rows: runtime chains (chain_registry.go),
// API keys (apikeys.go), webhook subscriptions (subscriptions.go), and a
// removed chain's deletion.
type Records struct {
	*db // one level up, so the two embedded views' pools are not ambiguous
	RecordReader
	mutations
}

// RecordReader reads the operator's rows; a read-only user may.
type RecordReader struct{ *db }

// Aggregates is the aggregator's view: per-height counts in, cumulative
// rows out (aggregates.go).
type Aggregates struct{ Progress }

// Retention is the pruner's view (prune.go, disk_usage.go).
type Retention struct {
	*db
	Progress
	mutations
}

// Tokens is the token metadata job's view (token_metadata.go).
type Tokens struct{ Progress }

// Traces is the traces backfill's view (traces_backfill.go): which
// heights lack traces, what to trace, and the write of traces alone.
type Traces struct{ Progress }

// Stream is the change stream appender's view (stream.go): the log's tail
// and the append, beside what it reads to build events.
type Stream struct {
	*db
	Progress
	StreamReader
}

// StreamReader reads the change stream's log and what its events carry
// (stream.go, stream_read.go, transfers_queries.go).
type StreamReader struct{ *db }

// TokenReader is the token routes' reads (transfers_read.go,
// token_metadata.go).
type TokenReader struct{ *db }

// TraceReader is the trace routes' reads (read_traces.go).
type TraceReader struct{ *db }

// RPCReader is the JSON-RPC route's own reads (read_rpc.go).
type RPCReader struct{ *db }

func (c *ClickHouse) Records() *Records       { return &Records{c.db, RecordReader{c.db}, mutations{c.db}} }
func (c *ClickHouse) Aggregates() *Aggregates { return &Aggregates{c.Progress} }
func (c *ClickHouse) Retention() *Retention   { return &Retention{c.db, c.Progress, mutations{c.db}} }
func (c *ClickHouse) Tokens() *Tokens         { return &Tokens{c.Progress} }
func (c *ClickHouse) Traces() *Traces         { return &Traces{c.Progress} }
func (c *ClickHouse) Stream() *Stream         { return &Stream{c.db, c.Progress, StreamReader{c.db}} }

// Reader is the read-only view of the same connection, for a process that
// both indexes and serves the query API (the dev stack, tests, benches).
func (c *ClickHouse) Reader() *Reader { return &Reader{c.db} }

func (r *Reader) Records() *RecordReader { return &RecordReader{r.db} }
func (r *Reader) Tokens() *TokenReader   { return &TokenReader{r.db} }
func (r *Reader) Traces() *TraceReader   { return &TraceReader{r.db} }
func (r *Reader) Stream() *StreamReader  { return &StreamReader{r.db} }
func (r *Reader) RPC() *RPCReader        { return &RPCReader{r.db} }

// Close releases the connections of every view.
func (r *Reader) Close() error { return r.close() }

// BlockTimes is the stream's copy of Reader.BlockTimes: an event carries
// its block's hash and time.
func (c *StreamReader) BlockTimes(ctx context.Context, chainID string, heights []uint64) (map[uint64]BlockTime, error) {
	return (&Reader{c.db}).BlockTimes(ctx, chainID, heights)
}
