// Package verify compares what bench-catchup's worker stored in ClickHouse
// with the simulated chain, height by height, and counts extra writes of
// heights (duplicates) that FINAL alone cannot show.
package verify

import (
	"context"
	"fmt"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/tideline-dev/tideline/pkg/simchain"
)

// verifyChunk is how many heights one round of verification queries covers:
// it bounds the rows held in memory (three small rows per height) and shows
// progress on a long chain.
const verifyChunk = 100_000

// maxReported is how many bad heights are printed with their reason.
const maxReported = 10

// stored is what ClickHouse holds for one height, read with FINAL (one row
// per key, the newest version) and is_canonical = 1 (no tombstones).
type stored struct {
	block               bool
	hash                string
	blockTxs, blockLogs uint32 // the block row's tx_count and log_count
	txs, logs           uint64 // transaction and log rows
	txHashes, logHashes uint64 // distinct block_hash of those rows
	txHash, logHash     string // their block_hash (any, when only one)
}

// mismatch says why a stored height is not the expected block, "" if it
// is: the block row with the expected hash and counts, and exactly the
// expected number of transaction and log rows, all of that block.
func mismatch(e simchain.Expected, s stored) string {
	switch {
	case !s.block:
		return "no canonical block row"
	case s.hash != e.Hash:
		return fmt.Sprintf("block hash %s, want %s", s.hash, e.Hash)
	case int(s.blockTxs) != e.TxCount || int(s.blockLogs) != e.LogCount:
		return fmt.Sprintf("block row counts %d txs %d logs, want %d and %d", s.blockTxs, s.blockLogs, e.TxCount, e.LogCount)
	case s.txs != uint64(e.TxCount):
		return fmt.Sprintf("%d transaction rows, want %d", s.txs, e.TxCount)
	case s.logs != uint64(e.LogCount):
		return fmt.Sprintf("%d log rows, want %d", s.logs, e.LogCount)
	case s.txs > 0 && (s.txHashes != 1 || s.txHash != e.Hash):
		return fmt.Sprintf("transaction rows of %d blocks (%s), want all of %s", s.txHashes, s.txHash, e.Hash)
	case s.logs > 0 && (s.logHashes != 1 || s.logHash != e.Hash):
		return fmt.Sprintf("log rows of %d blocks (%s), want all of %s", s.logHashes, s.logHash, e.Hash)
	}
	return ""
}

// Result is the outcome of comparing the database with the chain.
type Result struct {
	Missing        uint64 // heights in [0, head] that are not exactly the expected block
	Txs            uint64 // expected transactions in [0, head]
	Rows           uint64 // canonical blocks+transactions+logs rows in [0, head]
	Bad            []string
	DistinctBlocks uint64 // heights with any block row (any version)
	BlockRows      uint64 // block rows, unmerged versions included
	MarkRows       uint64 // indexed_heights rows, unmerged included
	DistinctMarks  uint64
}

// finalSettings keeps the is_canonical filter a WHERE after FINAL: 18.16
// may move a WHERE to PREWHERE by itself, which would filter rows before
// FINAL collapses them (see migration 0006).
func finalSettings(ctx context.Context) context.Context {
	return clickhouse.Context(ctx, clickhouse.WithSettings(clickhouse.Settings{"optimize_move_to_prewhere": 0}))
}

// Chain compares heights [0, head] of chainID in the database with the
// simulated chain; progress, if not nil, gets a line after each chunk but
// the last.
func Chain(ctx context.Context, conn driver.Conn, sim *simchain.Sim, chainID string, head uint64, progress func(string)) (Result, error) {
	var v Result
	qctx := finalSettings(ctx)
	for from := uint64(0); from <= head; from += verifyChunk {
		to := min(head, from+verifyChunk-1)
		got := make([]stored, to-from+1)
		rows, err := conn.Query(qctx, "SELECT number, hash, tx_count, log_count FROM blocks FINAL"+
			" WHERE chain_id = ? AND number BETWEEN ? AND ? AND is_canonical = 1", chainID, from, to)
		if err != nil {
			return v, fmt.Errorf("verify: blocks [%d, %d]: %w", from, to, err)
		}
		for rows.Next() {
			var n uint64
			var s stored
			if err := rows.Scan(&n, &s.hash, &s.blockTxs, &s.blockLogs); err != nil {
				rows.Close()
				return v, fmt.Errorf("verify: blocks [%d, %d]: %w", from, to, err)
			}
			s.block = true
			got[n-from] = s
		}
		if err := rowsDone(rows, "blocks", from, to); err != nil {
			return v, err
		}
		for _, t := range []struct {
			table          string
			count, nHashes func(*stored) *uint64
			hash           func(*stored) *string
		}{
			{"transactions", func(s *stored) *uint64 { return &s.txs }, func(s *stored) *uint64 { return &s.txHashes }, func(s *stored) *string { return &s.txHash }},
			{"logs", func(s *stored) *uint64 { return &s.logs }, func(s *stored) *uint64 { return &s.logHashes }, func(s *stored) *string { return &s.logHash }},
		} {
			rows, err := conn.Query(qctx, "SELECT block_number, count(), uniqExact(block_hash), any(block_hash) FROM "+t.table+" FINAL"+
				" WHERE chain_id = ? AND block_number BETWEEN ? AND ? AND is_canonical = 1 GROUP BY block_number", chainID, from, to)
			if err != nil {
				return v, fmt.Errorf("verify: %s [%d, %d]: %w", t.table, from, to, err)
			}
			for rows.Next() {
				var n, c, h uint64
				var hash string
				if err := rows.Scan(&n, &c, &h, &hash); err != nil {
					rows.Close()
					return v, fmt.Errorf("verify: %s [%d, %d]: %w", t.table, from, to, err)
				}
				s := &got[n-from]
				*t.count(s), *t.nHashes(s), *t.hash(s) = c, h, hash
			}
			if err := rowsDone(rows, t.table, from, to); err != nil {
				return v, err
			}
		}
		for i, s := range got {
			h := from + uint64(i)
			e := sim.Expected(h)
			v.Txs += uint64(e.TxCount)
			if s.block {
				v.Rows++
			}
			v.Rows += s.txs + s.logs
			if why := mismatch(e, s); why != "" {
				v.Missing++
				if len(v.Bad) < maxReported {
					v.Bad = append(v.Bad, fmt.Sprintf("height %d: %s", h, why))
				}
			}
		}
		if progress != nil && to < head {
			progress(fmt.Sprintf("verified heights [0, %d] of [0, %d]", to, head))
		}
	}
	// Rows per key without FINAL: duplicates that merges have not yet
	// collapsed (see Duplicates).
	for _, q := range []struct {
		sql        string
		rows, dist *uint64
	}{
		{"SELECT count(), uniqExact(number) FROM blocks WHERE chain_id = ?", &v.BlockRows, &v.DistinctBlocks},
		{"SELECT count(), uniqExact(number) FROM indexed_heights WHERE chain_id = ?", &v.MarkRows, &v.DistinctMarks},
	} {
		if err := conn.QueryRow(ctx, q.sql, chainID).Scan(q.rows, q.dist); err != nil {
			return v, fmt.Errorf("verify: %s: %w", q.sql, err)
		}
	}
	return v, nil
}

func rowsDone(rows driver.Rows, table string, from, to uint64) error {
	err := rows.Err()
	if cerr := rows.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("verify: %s [%d, %d]: %w", table, from, to, err)
	}
	return nil
}

// Duplicates is the number of extra writes of heights: how many times a
// block was written beyond once per height. Each write of a height adds a
// block row and an indexed_heights mark with a newer version, and counts in
// the worker's indexer_blocks_indexed_total; ReplacingMergeTree keeps one
// row per height in the end, so FINAL alone can never show a duplicate.
// Two views of the same thing, each a lower bound of the truth:
//   - written − distinct: the worker's counter of blocks written minus the
//     heights that have a block row. Exact unless a write landed but its
//     activity failed before counting it (then retried and counted once);
//   - rows − distinct without FINAL, on blocks and on indexed_heights:
//     extra versions still in unmerged parts (background merges remove
//     them, so right after the run this catches most but not all).
//
// The larger wins. written < 0 means the counter was not available.
func Duplicates(written int64, v Result) uint64 {
	var d uint64
	if written >= 0 && uint64(written) > v.DistinctBlocks {
		d = uint64(written) - v.DistinctBlocks
	}
	d = max(d, v.BlockRows-min(v.BlockRows, v.DistinctBlocks))
	d = max(d, v.MarkRows-min(v.MarkRows, v.DistinctMarks))
	return d
}
