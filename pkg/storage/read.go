package storage

import (
	"context"
	"fmt"
	"math"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/tideline-dev/tideline/pkg/chaindata"
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
//
// AnyAddress and AnyTopic are eth_getLogs' filter, ANDed with the rest: a
// log of any of the addresses, whose topic i is any of AnyTopic[i] (an
// empty set: any topic). Values are lower-case hex, as stored.
type LogFilter struct {
	Address    string // lower-case 0x address; "" for any
	Topics     []TopicTerm
	Or         []bool
	AnyAddress []string
	AnyTopic   [4][]string
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

// ReadState reads the watermark, aggregator height and pruned height the
// chain_state table holds for the chain.
func (c *Reader) ReadState(ctx context.Context, chainID string) (State, error) {
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
func (c *Reader) ReadWatermark(ctx context.Context, chainID string, start uint64, st State) (uint64, bool, error) {
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

func scanBlock(r driver.Rows) (chaindata.Block, error) {
	var b chaindata.Block
	var ts uint32
	var raw string
	err := r.Scan(&b.Number, &b.Hash, &b.ParentHash, &ts, &b.Miner, &b.GasUsed, &b.GasLimit,
		&b.BaseFeePerGas, &b.Size, &b.TxCount, &b.LogCount, &raw)
	b.Timestamp, b.Raw = uint64(ts), []byte(raw)
	return b, err
}

func scanTransaction(r driver.Rows) (chaindata.Transaction, error) {
	var tx chaindata.Transaction
	var raw, receipt string
	err := r.Scan(&tx.BlockNumber, &tx.BlockHash, &tx.Index, &tx.Hash, &tx.Type, &tx.From, &tx.To, &tx.Value,
		&tx.Nonce, &tx.Gas, &tx.GasPrice, &tx.Status, &tx.GasUsed, &tx.EffectiveGasPrice, &tx.ContractAddress,
		&tx.LogCount, &raw, &receipt)
	tx.Raw, tx.ReceiptRaw = []byte(raw), []byte(receipt)
	return tx, err
}

func scanLog(r driver.Rows) (chaindata.Log, error) {
	var l chaindata.Log
	var topics [4]string
	var count uint8
	var raw string
	err := r.Scan(&l.BlockNumber, &l.BlockHash, &l.TxHash, &l.TxIndex, &l.LogIndex, &l.Address,
		&topics[0], &topics[1], &topics[2], &topics[3], &count, &l.Data, &raw)
	l.Topics = append(make([]string, 0, count), topics[:min(int(count), 4)]...)
	l.Raw = []byte(raw)
	return l, err
}

func (c *db) blocks(ctx context.Context, what string, s statement) ([]chaindata.Block, error) {
	var out []chaindata.Block
	err := c.query(ctx, what, s, func(r driver.Rows) error {
		b, err := scanBlock(r)
		out = append(out, b)
		return err
	})
	return out, err
}

func (c *db) transactions(ctx context.Context, what string, s statement) ([]chaindata.Transaction, error) {
	var out []chaindata.Transaction
	err := c.query(ctx, what, s, func(r driver.Rows) error {
		tx, err := scanTransaction(r)
		out = append(out, tx)
		return err
	})
	return out, err
}

func (c *db) logs(ctx context.Context, what string, s statement) ([]chaindata.Log, error) {
	var out []chaindata.Log
	err := c.query(ctx, what, s, func(r driver.Rows) error {
		l, err := scanLog(r)
		out = append(out, l)
		return err
	})
	return out, err
}

func (c *db) positions(ctx context.Context, what string, s statement) ([]Position, error) {
	var out []Position
	err := c.query(ctx, what, s, func(r driver.Rows) error {
		var p Position
		err := r.Scan(&p.Block, &p.Index)
		out = append(out, p)
		return err
	})
	return out, err
}
