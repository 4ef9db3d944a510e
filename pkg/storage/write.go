package storage

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/tideline-dev/tideline/pkg/chain"
)

// WriteBlock writes one height: blocks, then transactions and logs, then
// the indexed_heights mark, each as one batch insert with named columns.
// All rows share one version, newer than any earlier write from this
// process, so a rewrite replaces the previous rows of the height.
//
// A rewrite with fewer transactions or logs than before (a reorg) leaves
// the old rows at the higher positions: ReplacingMergeTree only replaces
// rows with the same key. A height that may hold another block is written
// with RewriteBlock, which supersedes those rows too.
func (c *ClickHouse) WriteBlock(ctx context.Context, chainID string, data *chain.BlockData) error {
	if chainID == "" {
		return errors.New("storage: WriteBlock: empty chain id")
	}
	if data == nil {
		return fmt.Errorf("storage: WriteBlock chain %q: nil block data", chainID)
	}
	b := &data.Block
	if err := checkBlockData(data); err != nil {
		return fmt.Errorf("storage: WriteBlock chain %q height %d: %w", chainID, b.Number, err)
	}
	version := c.clock.next()

	rows := [][]any{blockRow(chainID, b, version)}
	if err := c.insert(ctx, insertStmt{tableBlocks, blockColumns}, rows); err != nil {
		return writeErr(tableBlocks, chainID, b.Number, err)
	}

	if len(data.Transactions) > 0 {
		rows = rows[:0]
		for i := range data.Transactions {
			rows = append(rows, txRow(chainID, &data.Transactions[i], version))
		}
		if err := c.insert(ctx, insertStmt{tableTransactions, transactionColumns}, rows); err != nil {
			return writeErr(tableTransactions, chainID, b.Number, err)
		}
	}

	if len(data.Logs) > 0 {
		rows = rows[:0]
		for i := range data.Logs {
			rows = append(rows, logRow(chainID, &data.Logs[i], version))
		}
		if err := c.insert(ctx, insertStmt{tableLogs, logColumns}, rows); err != nil {
			return writeErr(tableLogs, chainID, b.Number, err)
		}
	}

	rows = [][]any{{chainID, b.Number, b.Hash, time.Now().UTC().Truncate(time.Second), version}}
	if err := c.insert(ctx, insertStmt{tableIndexedHeights, indexedHeightColumns}, rows); err != nil {
		return writeErr(tableIndexedHeights, chainID, b.Number, err)
	}
	return nil
}

// blockRow, txRow and logRow are one row each in the order of
// blockColumns, transactionColumns and logColumns.
func blockRow(chainID string, b *chain.Block, version uint64) []any {
	return []any{
		chainID, b.Number, b.Hash, b.ParentHash, time.Unix(int64(b.Timestamp), 0).UTC(), b.Miner,
		b.GasUsed, b.GasLimit, b.BaseFeePerGas, b.Size, b.TxCount,
		b.LogCount, b.Raw, version,
	}
}

func txRow(chainID string, t *chain.Transaction, version uint64) []any {
	return []any{
		chainID, t.BlockNumber, t.BlockHash, t.Index, t.Hash, t.Type,
		t.From, t.To, t.Value, t.Nonce, t.Gas, t.GasPrice,
		t.Status, t.GasUsed, t.EffectiveGasPrice, t.ContractAddress,
		t.LogCount, t.Raw, t.ReceiptRaw, version,
	}
}

func logRow(chainID string, l *chain.Log, version uint64) []any {
	var topics [4]string
	copy(topics[:], l.Topics)
	return []any{
		chainID, l.BlockNumber, l.BlockHash, l.TxHash, l.TxIndex,
		l.LogIndex, l.Address, topics[0], topics[1], topics[2], topics[3],
		uint8(len(l.Topics)), l.Data, l.Raw, version,
	}
}

// checkBlockData refuses data that would be stored under the wrong key or
// lose information in a column.
func checkBlockData(d *chain.BlockData) error {
	if d.Block.Timestamp > math.MaxUint32 {
		return fmt.Errorf("block timestamp %d does not fit a DateTime", d.Block.Timestamp)
	}
	for i := range d.Transactions {
		if n := d.Transactions[i].BlockNumber; n != d.Block.Number {
			return fmt.Errorf("transaction %d (%s) has block number %d", i, d.Transactions[i].Hash, n)
		}
	}
	for i := range d.Logs {
		l := &d.Logs[i]
		if l.BlockNumber != d.Block.Number {
			return fmt.Errorf("log %d has block number %d", l.LogIndex, l.BlockNumber)
		}
		if len(l.Topics) > 4 {
			return fmt.Errorf("log %d has %d topics; the EVM allows at most 4", l.LogIndex, len(l.Topics))
		}
	}
	return nil
}

func writeErr(table, chainID string, height uint64, err error) error {
	return fmt.Errorf("storage: writing %s for chain %q height %d: %w", table, chainID, height, err)
}

// versionClock hands out ReplacingMergeTree versions: wall-clock
// nanoseconds, so writes from different processes order by time, but
// never repeating or going back within a process, so two writes of one
// height from this process always order by call.
type versionClock struct {
	last atomic.Uint64
}

func (v *versionClock) next() uint64 {
	for {
		now := uint64(time.Now().UnixNano())
		last := v.last.Load()
		if now <= last {
			now = last + 1
		}
		if v.last.CompareAndSwap(last, now) {
			return now
		}
	}
}
