package storage

import (
	"context"
	"fmt"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// The change stream's table (migration create_stream_events): pkg/stream
// appends, the query API and the webhooks read. Which events to append is
// pkg/stream's business; here they are rows.

const tableStreamEvents = "stream_events"

var streamEventColumns = []string{"chain_id", "seq", "kind", "number", "hash", "parent_hash", "timestamp", "version"}

// The kinds of stream events.
const (
	StreamAdded   = "added"
	StreamRemoved = "removed"
)

// StreamEvent is one event of a chain's change stream: the block added to
// or removed from the streamed chain.
type StreamEvent struct {
	Seq        uint64
	Kind       string // StreamAdded or StreamRemoved
	Number     uint64
	Hash       string
	ParentHash string
	Timestamp  uint64 // unix seconds
}

// AppendStreamEvents stores events of one chain, in one insert. The
// caller numbers them; an append repeated with the same numbers and
// contents (a retry) changes nothing that is read.
func (c *Stream) AppendStreamEvents(ctx context.Context, chainID string, events []StreamEvent) error {
	if len(events) == 0 {
		return nil
	}
	version := c.clock.next()
	rows := make([][]any, len(events))
	for i, e := range events {
		rows[i] = []any{chainID, e.Seq, e.Kind, e.Number, e.Hash, e.ParentHash, time.Unix(int64(e.Timestamp), 0).UTC(), version}
	}
	if err := c.insert(ctx, insertStmt{tableStreamEvents, streamEventColumns}, rows); err != nil {
		return fmt.Errorf("storage: writing %d %s of chain %q from seq %d: %w", len(events), tableStreamEvents, chainID, events[0].Seq, err)
	}
	return nil
}

// StreamEvents returns up to limit events of the chain after seq, in
// order.
func (c *StreamReader) StreamEvents(ctx context.Context, chainID string, after uint64, limit int) ([]StreamEvent, error) {
	return c.streamEvents(ctx, fmt.Sprintf("reading %s of chain %q after seq %d", tableStreamEvents, chainID, after),
		streamEventsQuery{chainID, after, limit, false})
}

// StreamTail returns the chain's last n events, in order (none for a
// chain never streamed).
func (c *StreamReader) StreamTail(ctx context.Context, chainID string, n int) ([]StreamEvent, error) {
	out, err := c.streamEvents(ctx, fmt.Sprintf("reading the last %d %s of chain %q", n, tableStreamEvents, chainID),
		streamEventsQuery{chainID, 0, n, true})
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, err
}

// StreamedAt returns the newest event of each height of [from, to] that
// has one: what the stream last said of it. It reads the chain's whole
// log (the table is ordered by seq); the appender asks only when its
// recent events do not cover a height.
func (c *StreamReader) StreamedAt(ctx context.Context, chainID string, from, to uint64) (map[uint64]StreamEvent, error) {
	out := map[uint64]StreamEvent{}
	err := c.query(ctx, fmt.Sprintf("reading %s of chain %q at heights [%d, %d]", tableStreamEvents, chainID, from, to),
		streamedAtQuery{chainID, from, to}, func(r driver.Rows) error {
			e, err := scanStreamEvent(r)
			if err == nil {
				out[e.Number] = e
			}
			return err
		})
	return out, err
}

// StreamSeqOfHeight returns the seq of the first event of a height at or
// above height: where a consumer resuming "from a height" starts. found is
// false while no such event is stored.
func (c *StreamReader) StreamSeqOfHeight(ctx context.Context, chainID string, height uint64) (seq uint64, found bool, err error) {
	err = c.query(ctx, fmt.Sprintf("reading %s of chain %q from height %d", tableStreamEvents, chainID, height),
		streamSeqOfHeightQuery{chainID, height}, func(r driver.Rows) error {
			found = true
			return r.Scan(&seq)
		})
	return seq, found, err
}

func (c *db) streamEvents(ctx context.Context, what string, s statement) ([]StreamEvent, error) {
	var out []StreamEvent
	err := c.query(ctx, what, s, func(r driver.Rows) error {
		e, err := scanStreamEvent(r)
		if err == nil {
			out = append(out, e)
		}
		return err
	})
	return out, err
}

func scanStreamEvent(r driver.Rows) (StreamEvent, error) {
	var (
		e  StreamEvent
		ts uint32
	)
	err := r.Scan(&e.Seq, &e.Kind, &e.Number, &e.Hash, &e.ParentHash, &ts)
	e.Timestamp = uint64(ts)
	return e, err
}

const streamEventRead = "seq, kind, number, hash, parent_hash, toUInt32(timestamp)"

// streamEventsQuery reads events after a seq in order, or (last) the last
// ones newest first. A seq written twice (a retried append) is read once.
type streamEventsQuery struct {
	chainID string
	after   uint64
	limit   int
	last    bool
}

func (q streamEventsQuery) toSQL() (string, []any) {
	order := "seq"
	if q.last {
		order = "seq DESC"
	}
	return "SELECT " + streamEventRead + " FROM " + tableStreamEvents + " WHERE chain_id = ? AND seq > ?" +
		" ORDER BY " + order + ", version DESC LIMIT 1 BY seq LIMIT ?", []any{q.chainID, q.after, q.limit}
}

// streamedAtQuery reads the newest event of each height in a range.
type streamedAtQuery struct {
	chainID  string
	from, to uint64
}

func (q streamedAtQuery) toSQL() (string, []any) {
	return "SELECT " + streamEventRead + " FROM " + tableStreamEvents + " WHERE chain_id = ? AND number BETWEEN ? AND ?" +
		" ORDER BY number, seq DESC LIMIT 1 BY number", []any{q.chainID, q.from, q.to}
}

// streamSeqOfHeightQuery finds the first event at or above a height.
type streamSeqOfHeightQuery struct {
	chainID string
	height  uint64
}

func (q streamSeqOfHeightQuery) toSQL() (string, []any) {
	return "SELECT seq FROM " + tableStreamEvents + " WHERE chain_id = ? AND number >= ? ORDER BY seq LIMIT 1",
		[]any{q.chainID, q.height}
}

// BlockHeader is what the stream says of a canonical block.
type BlockHeader struct {
	Number     uint64
	Hash       string
	ParentHash string
	Timestamp  uint64
}

// BlockHeaders returns the canonical blocks of [from, to] that have one,
// ascending, without their raw JSON.
func (c *StreamReader) BlockHeaders(ctx context.Context, chainID string, from, to uint64) ([]BlockHeader, error) {
	var out []BlockHeader
	err := c.query(ctx, fmt.Sprintf("reading the headers of %s of chain %q in [%d, %d]", tableBlocks, chainID, from, to),
		blockHeadersQuery{chainID, from, to}, func(r driver.Rows) error {
			var (
				h  BlockHeader
				ts uint32
			)
			if err := r.Scan(&h.Number, &h.Hash, &h.ParentHash, &ts); err != nil {
				return err
			}
			h.Timestamp = uint64(ts)
			out = append(out, h)
			return nil
		})
	return out, err
}

// blockHeadersQuery reads narrow columns of a range's canonical blocks.
type blockHeadersQuery struct {
	chainID  string
	from, to uint64
}

func (q blockHeadersQuery) toSQL() (string, []any) {
	return newestCanonical("number, hash, parent_hash, toUInt32(timestamp)", "number, hash, parent_hash, timestamp", tableBlocks,
		"chain_id = ? AND number BETWEEN ? AND ?", "number") + " ORDER BY number", []any{q.chainID, q.from, q.to}
}
