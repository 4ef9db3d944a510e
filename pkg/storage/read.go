package storage

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/tideline-dev/tideline/pkg/chain"
)

// Reads for the query API (pkg/api). Nothing here writes: the API may run
// as a ClickHouse user with `readonly = 1`.

// Position is where a transaction or a log sits: its height and its index
// in the block (tx_index or log_index).
type Position struct {
	Block uint64
	Index uint32
}

// State is what chain_state says about a chain's served data.
type State struct {
	// Watermark is the last contiguous height the indexer saved (every
	// height from the start height up to it is indexed).
	Watermark    uint64
	HasWatermark bool
	// AggregatorHeight is the highest height counted into aggregates.
	AggregatorHeight uint64
	HasAggregator    bool
	// PrunedHeight is the highest height whose rows retention removed.
	PrunedHeight uint64
	HasPruned    bool
}

// TopicTerm is "topicN = value" of a log filter.
type TopicTerm struct {
	Position int    // 0-3
	Value    string // 0x + 64 lower-case hex digits
}

// LogFilter selects logs. Topic terms are combined left to right: Or[i]
// joins Topics[i] and Topics[i+1] with OR instead of AND.
type LogFilter struct {
	Address string // lower-case 0x address; "" for any
	Topics  []TopicTerm
	Or      []bool
}

// TimeoutError is a read that ran out of its time: the caller's deadline,
// or ClickHouse's max_execution_time derived from it.
type TimeoutError struct {
	What string
	Err  error
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("storage: %s: timed out: %v", e.What, e.Err)
}
func (e *TimeoutError) Unwrap() error { return e.Err }

// clickhouseTimeoutCode is TIMEOUT_EXCEEDED (max_execution_time).
const clickhouseTimeoutCode = 159

// readContext gives one API read its time budget twice: the driver's
// context ends with the caller's (cancelling the query on the server),
// and the query carries max_execution_time so that the server stops on its
// own even if the cancel packet is lost. The driver would otherwise derive
// max_execution_time from the deadline plus five seconds, so the context
// handed to it has no deadline, only the cancellation.
func (c *ClickHouse) readContext(ctx context.Context) (context.Context, context.CancelFunc) {
	budget := c.cfg.QueryTimeout
	if d, ok := ctx.Deadline(); ok {
		budget = min(budget, time.Until(d))
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, cancel)
	timer := time.AfterFunc(budget, cancel)
	secs := int(math.Ceil(budget.Seconds()))
	if secs < 1 {
		secs = 1
	}
	rctx = clickhouse.Context(rctx, clickhouse.WithSettings(clickhouse.Settings{"max_execution_time": secs}))
	return rctx, func() {
		stop()
		timer.Stop()
		cancel()
	}
}

// readErr wraps a failed read, as a *TimeoutError when its time ran out
// (rctx ended: the caller's deadline or cancel, or the budget) or the
// server stopped it at max_execution_time.
func readErr(rctx context.Context, what string, err error) error {
	var exc *clickhouse.Exception
	if rctx.Err() != nil || (errors.As(err, &exc) && exc.Code == clickhouseTimeoutCode) {
		return &TimeoutError{What: what, Err: err}
	}
	return fmt.Errorf("storage: %s: %w", what, err)
}

// query runs a read statement and hands each row to scan.
func (c *ClickHouse) query(ctx context.Context, what string, s statement, scan func(driver.Rows) error) error {
	rctx, cancel := c.readContext(ctx)
	defer cancel()
	sql, args := s.toSQL()
	rows, err := c.conn.Query(rctx, sql, args...)
	if err != nil {
		return readErr(rctx, what, err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return readErr(rctx, what, err)
		}
	}
	if err := rows.Err(); err != nil {
		return readErr(rctx, what, err)
	}
	return nil
}

// ReadState reads the watermark, aggregator height and pruned height the
// chain_state table holds for the chain.
func (c *ClickHouse) ReadState(ctx context.Context, chainID string) (State, error) {
	var st State
	err := c.query(ctx, fmt.Sprintf("reading %s of chain %q", tableChainState, chainID), readStateQuery{chainID},
		func(r driver.Rows) error {
			var key string
			var v uint64
			if err := r.Scan(&key, &v); err != nil {
				return err
			}
			switch key {
			case StateWatermark:
				st.Watermark, st.HasWatermark = v, true
			case StateAggregatorHeight:
				st.AggregatorHeight, st.HasAggregator = v, true
			case StatePrunedHeight:
				st.PrunedHeight, st.HasPruned = v, true
			}
			return nil
		})
	return st, err
}

// watermarkProbe is how many heights above the saved watermark one
// ReadWatermark looks at: near the head the indexer is a few heights
// ahead of its last save, and a catch-up's saves move in steps of its
// HeadScan interval.
const watermarkProbe = 10_000

// ReadWatermark returns the highest H such that every height from start
// to H is indexed, as far as it can tell without writing: the saved
// watermark of st (StateWatermark, read by ReadState), advanced over the
// marks contiguous above it (at most watermarkProbe of them). Marks are
// written after the rows they mark and never deleted, so every height up
// to the answer is complete. found is false when nothing from start on is
// known to be indexed.
//
// It differs from Watermark, which records complete chunks in
// indexed_chunks as it scans: the API reads only.
func (c *ClickHouse) ReadWatermark(ctx context.Context, chainID string, start uint64, st State) (uint64, bool, error) {
	wm, found := uint64(0), false
	next := start
	if st.HasWatermark && st.Watermark >= start {
		if st.Watermark == math.MaxUint64 {
			return st.Watermark, true, nil
		}
		wm, found, next = st.Watermark, true, st.Watermark+1
	}
	err := c.query(ctx, fmt.Sprintf("reading %s of chain %q above %d", tableIndexedHeights, chainID, next),
		indexedNumbersQuery{chainID, next, satAdd(next, watermarkProbe-1)},
		func(r driver.Rows) error {
			var n uint64
			if err := r.Scan(&n); err != nil {
				return err
			}
			if n == next {
				wm, found, next = n, true, n+1
			}
			return nil
		})
	if err != nil {
		return 0, false, err
	}
	return wm, found, nil
}

func scanBlock(r driver.Rows) (chain.Block, error) {
	var b chain.Block
	var ts uint32
	var raw string
	err := r.Scan(&b.Number, &b.Hash, &b.ParentHash, &ts, &b.Miner, &b.GasUsed, &b.GasLimit,
		&b.BaseFeePerGas, &b.Size, &b.TxCount, &b.LogCount, &raw)
	b.Timestamp, b.Raw = uint64(ts), []byte(raw)
	return b, err
}

func scanTransaction(r driver.Rows) (chain.Transaction, error) {
	var tx chain.Transaction
	var raw, receipt string
	err := r.Scan(&tx.BlockNumber, &tx.BlockHash, &tx.Index, &tx.Hash, &tx.Type, &tx.From, &tx.To, &tx.Value,
		&tx.Nonce, &tx.Gas, &tx.GasPrice, &tx.Status, &tx.GasUsed, &tx.EffectiveGasPrice, &tx.ContractAddress,
		&tx.LogCount, &raw, &receipt)
	tx.Raw, tx.ReceiptRaw = []byte(raw), []byte(receipt)
	return tx, err
}

func scanLog(r driver.Rows) (chain.Log, error) {
	var l chain.Log
	var topics [4]string
	var count uint8
	var raw string
	err := r.Scan(&l.BlockNumber, &l.BlockHash, &l.TxHash, &l.TxIndex, &l.LogIndex, &l.Address,
		&topics[0], &topics[1], &topics[2], &topics[3], &count, &l.Data, &raw)
	l.Topics = append(make([]string, 0, count), topics[:min(int(count), 4)]...)
	l.Raw = []byte(raw)
	return l, err
}

func (c *ClickHouse) blocks(ctx context.Context, what string, s statement) ([]chain.Block, error) {
	var out []chain.Block
	err := c.query(ctx, what, s, func(r driver.Rows) error {
		b, err := scanBlock(r)
		out = append(out, b)
		return err
	})
	return out, err
}

func (c *ClickHouse) transactions(ctx context.Context, what string, s statement) ([]chain.Transaction, error) {
	var out []chain.Transaction
	err := c.query(ctx, what, s, func(r driver.Rows) error {
		tx, err := scanTransaction(r)
		out = append(out, tx)
		return err
	})
	return out, err
}

func (c *ClickHouse) logs(ctx context.Context, what string, s statement) ([]chain.Log, error) {
	var out []chain.Log
	err := c.query(ctx, what, s, func(r driver.Rows) error {
		l, err := scanLog(r)
		out = append(out, l)
		return err
	})
	return out, err
}

func (c *ClickHouse) positions(ctx context.Context, what string, s statement) ([]Position, error) {
	var out []Position
	err := c.query(ctx, what, s, func(r driver.Rows) error {
		var p Position
		err := r.Scan(&p.Block, &p.Index)
		out = append(out, p)
		return err
	})
	return out, err
}

// BlocksInRange returns the canonical blocks of [from, to], ascending.
// Keep the range short (a page): FINAL reads all of it.
func (c *ClickHouse) BlocksInRange(ctx context.Context, chainID string, from, to uint64) ([]chain.Block, error) {
	return c.blocks(ctx, fmt.Sprintf("reading %s of chain %q in [%d, %d]", tableBlocks, chainID, from, to),
		blocksRangeQuery{chainID, from, to})
}

// BlocksAt returns the canonical blocks of the given heights, ascending;
// a height without one is left out.
func (c *ClickHouse) BlocksAt(ctx context.Context, chainID string, heights []uint64) ([]chain.Block, error) {
	if len(heights) == 0 {
		return nil, nil
	}
	return c.blocks(ctx, fmt.Sprintf("reading %s of chain %q at %d heights", tableBlocks, chainID, len(heights)),
		blocksAtQuery{chainID, heights})
}

// BlockTime is a block's hash and time.
type BlockTime struct {
	Hash      string
	Timestamp uint64
}

// BlockTimes returns the hash and time of the canonical blocks of the
// given heights that have one, reading no raw JSON.
func (c *ClickHouse) BlockTimes(ctx context.Context, chainID string, heights []uint64) (map[uint64]BlockTime, error) {
	out := make(map[uint64]BlockTime, len(heights))
	if len(heights) == 0 {
		return out, nil
	}
	err := c.query(ctx, fmt.Sprintf("reading times of %s of chain %q at %d heights", tableBlocks, chainID, len(heights)),
		blockTimesQuery{chainID, heights},
		func(r driver.Rows) error {
			var n uint64
			var bt BlockTime
			var ts uint32
			if err := r.Scan(&n, &bt.Hash, &ts); err != nil {
				return err
			}
			bt.Timestamp = uint64(ts)
			out[n] = bt
			return nil
		})
	return out, err
}

// BlockHeightsByHash returns the heights in [lo, hi] where block_by_hash
// has the hash as a canonical block, ascending.
func (c *ClickHouse) BlockHeightsByHash(ctx context.Context, chainID, hash string, lo, hi uint64) ([]uint64, error) {
	var out []uint64
	err := c.query(ctx, fmt.Sprintf("reading %s of chain %q", tableBlockByHash, chainID),
		blockHeightsByHashQuery{chainID, hash, lo, hi},
		func(r driver.Rows) error {
			var n uint64
			err := r.Scan(&n)
			out = append(out, n)
			return err
		})
	return out, err
}

// Windows of BlockAtTime: an hour, then 64 times wider each step, then
// all time.
const (
	timeWindowFirst  = 3600
	timeWindowGrowth = 64
)

// BlockAtTime returns the height of the first canonical block at or after
// t (last = false) or the last at or before t (last = true) among the
// heights [lo, hi], from block_by_time. The search starts with an hour's
// window next to t and widens it, so a time near blocks reads a few
// granules; found is false when no block qualifies.
func (c *ClickHouse) BlockAtTime(ctx context.Context, chainID string, t uint64, last bool, lo, hi uint64) (height, timestamp uint64, found bool, err error) {
	if t > math.MaxUint32 {
		if !last {
			return 0, 0, false, nil // DateTime ends in 2106
		}
		t = math.MaxUint32
	}
	for w := uint64(timeWindowFirst); ; w *= timeWindowGrowth {
		q := heightAtTimeQuery{chainID: chainID, min: lo, max: hi, last: last}
		if last {
			q.lo, q.hi = t-min(t, w), t
		} else {
			q.lo, q.hi = t, min(t+w, math.MaxUint32)
		}
		whole := (last && q.lo == 0) || (!last && q.hi == math.MaxUint32)
		var ts uint64
		got := false
		err = c.query(ctx, fmt.Sprintf("reading %s of chain %q near %d", tableBlockByTime, chainID, t), q,
			func(r driver.Rows) error {
				var n uint64
				var s uint32
				got = true
				err := r.Scan(&n, &s)
				height, ts = n, uint64(s)
				return err
			})
		if err != nil || got {
			return height, ts, got, err
		}
		if whole {
			return 0, 0, false, nil
		}
	}
}

// TxPositionsByHash returns the canonical positions of a transaction hash
// in [lo, hi] from tx_by_hash, first by height.
func (c *ClickHouse) TxPositionsByHash(ctx context.Context, chainID, hash string, lo, hi uint64) ([]Position, error) {
	return c.positions(ctx, fmt.Sprintf("reading %s of chain %q", tableTxByHash, chainID),
		txPositionsByHashQuery{chainID, hash, lo, hi})
}

// TransactionsAt returns the canonical transactions at the positions,
// ascending; a position without one is left out.
func (c *ClickHouse) TransactionsAt(ctx context.Context, chainID string, ps []Position) ([]chain.Transaction, error) {
	if len(ps) == 0 {
		return nil, nil
	}
	return c.transactions(ctx, fmt.Sprintf("reading %s of chain %q at %d positions", tableTransactions, chainID, len(ps)),
		transactionsAtQuery{chainID, ps})
}

// TxFee is what a transaction paid.
type TxFee struct {
	Hash              string
	GasPrice          string // decimal wei, "" if the node omitted it
	EffectiveGasPrice string // decimal wei, "" if the receipt omitted it
	GasUsed           uint64
}

// TransactionFees returns the fees of the canonical transactions at the
// positions that have one, reading no raw JSON.
func (c *ClickHouse) TransactionFees(ctx context.Context, chainID string, ps []Position) (map[Position]TxFee, error) {
	out := make(map[Position]TxFee, len(ps))
	if len(ps) == 0 {
		return out, nil
	}
	err := c.query(ctx, fmt.Sprintf("reading fees of %s of chain %q at %d positions", tableTransactions, chainID, len(ps)),
		txFeesQuery{chainID, ps},
		func(r driver.Rows) error {
			var p Position
			var f TxFee
			if err := r.Scan(&p.Block, &p.Index, &f.Hash, &f.GasPrice, &f.EffectiveGasPrice, &f.GasUsed); err != nil {
				return err
			}
			out[p] = f
			return nil
		})
	return out, err
}

// BlockTransactions returns up to limit canonical transactions of a
// block from index `from` on, in order.
func (c *ClickHouse) BlockTransactions(ctx context.Context, chainID string, height uint64, from uint32, limit int) ([]chain.Transaction, error) {
	return c.transactions(ctx, fmt.Sprintf("reading %s of chain %q at height %d", tableTransactions, chainID, height),
		blockTransactionsQuery{chainID, height, from, limit})
}

// AddressTxQuery selects an address's transactions.
type AddressTxQuery struct {
	Address  string // lower-case 0x address
	From, To uint64 // heights, inclusive
	Desc     bool   // newest first
	After    *Position
	Limit    int
	Offset   int
}

// AddressTxPositions lists the positions of an address's transactions
// (sent, received or creating a contract) from address_txs.
func (c *ClickHouse) AddressTxPositions(ctx context.Context, chainID string, q AddressTxQuery) ([]Position, error) {
	return c.positions(ctx, fmt.Sprintf("reading %s of chain %q", tableAddressTxs, chainID),
		addressTxPositionsQuery{chainID, q.Address, q.From, q.To, q.Desc, q.After, q.Limit, q.Offset})
}

// LogQuery selects logs in a height range.
type LogQuery struct {
	From, To uint64
	Filter   LogFilter
	After    *Position
	Limit    int
	Offset   int
}

// Logs returns the canonical logs that q selects, in order.
func (c *ClickHouse) Logs(ctx context.Context, chainID string, q LogQuery) ([]chain.Log, error) {
	return c.logs(ctx, fmt.Sprintf("reading %s of chain %q in [%d, %d]", tableLogs, chainID, q.From, q.To),
		logsQuery{chainID, q.From, q.To, q.Filter, q.After, q.Limit, q.Offset})
}

// TxLogs returns the canonical logs of the transaction at a position.
func (c *ClickHouse) TxLogs(ctx context.Context, chainID string, p Position) ([]chain.Log, error) {
	return c.logs(ctx, fmt.Sprintf("reading %s of chain %q at %d/%d", tableLogs, chainID, p.Block, p.Index),
		txLogsQuery{chainID, p.Block, p.Index})
}

// AggregatesAt returns the aggregates rows of the given heights that
// exist, by height.
func (c *ClickHouse) AggregatesAt(ctx context.Context, chainID string, heights []uint64) (map[uint64]AggregateRow, error) {
	out := map[uint64]AggregateRow{}
	if len(heights) == 0 {
		return out, nil
	}
	err := c.query(ctx, fmt.Sprintf("reading %s of chain %q", tableAggregates, chainID), aggregatesAtQuery{chainID, heights},
		func(r driver.Rows) error {
			var a AggregateRow
			if err := r.Scan(&a.Number, &a.BlockHash, &a.Txs, &a.Logs, &a.Bytes); err != nil {
				return err
			}
			out[a.Number] = a
			return nil
		})
	return out, err
}
