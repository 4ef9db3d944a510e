package storage

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/stretchr/testify/require"
)

// BenchmarkPointReads times the query API's point reads (a block by height,
// a transaction at a position, through the statements of read_queries.go)
// on 10,000 default-mix blocks merged into one part, with the tables'
// index_granularity of 8192 rows (the migrations') and, for comparison, on
// copies with 1,024. A point read decompresses and parses a whole granule
// of every column it selects: 8,192 blocks carry ~14 MB of `raw`, 8,192
// transactions ~7 MB. 18.16 has no adaptive granularity, so the granule is
// what a look-up by hash or address costs once it reaches a main table
// (docs/performance.md).
//
//	go test -run '^$' -bench BenchmarkPointReads -benchtime 200x ./pkg/storage/
func BenchmarkPointReads(b *testing.B) {
	const chainID, n = "p", 10_000
	c := benchMixIndex(b, chainID, n, tableBlocks, tableTransactions)
	ctx := context.Background()
	for _, g := range []int{8192, 1024} {
		blocks, txs := tableBlocks, tableTransactions
		if g != 8192 {
			blocks, txs = fmt.Sprintf("blocks_g%d", g), fmt.Sprintf("transactions_g%d", g)
			for _, pair := range [][2]string{{blocks, tableBlocks}, {txs, tableTransactions}} {
				key := "(chain_id, number)"
				part := "intDiv(number, 1000000)"
				if pair[1] == tableTransactions {
					key, part = "(chain_id, block_number, tx_index)", "intDiv(block_number, 1000000)"
				}
				require.NoError(b, c.execSQL(ctx, fmt.Sprintf("CREATE TABLE %s AS %s ENGINE = ReplacingMergeTree(version)"+
					" PARTITION BY %s ORDER BY %s SETTINGS index_granularity = %d", pair[0], pair[1], part, key, g)))
				require.NoError(b, c.execSQL(ctx, fmt.Sprintf("INSERT INTO %s SELECT * FROM %s", pair[0], pair[1])))
				require.NoError(b, c.execSQL(ctx, "OPTIMIZE TABLE "+pair[0]+" FINAL"))
			}
		}
		r := rand.New(rand.NewPCG(1, uint64(g)))
		b.Run(fmt.Sprintf("block/granularity=%d", g), func(b *testing.B) {
			for b.Loop() {
				h := r.Uint64N(n)
				got := readCount(b, c, renamed(blocksAtQuery{chainID, []uint64{h}}, tableBlocks, blocks))
				require.Equal(b, 1, got)
			}
		})
		b.Run(fmt.Sprintf("transaction/granularity=%d", g), func(b *testing.B) {
			for b.Loop() {
				p := Position{Block: r.Uint64N(n), Index: uint32(r.IntN(20))}
				got := readCount(b, c, renamed(transactionsAtQuery{chainID, []Position{p}, txAllColumns}, tableTransactions, txs))
				require.Equal(b, 1, got)
			}
		})
	}
}

// benchMixIndex opens a bench database holding n default-mix blocks of
// chainID (20 transactions of 2 logs each), the tables named merged into
// one part each.
func benchMixIndex(b *testing.B, chainID string, n uint64, merged ...string) *ClickHouse {
	c := benchOpen(b)
	ctx := context.Background()
	for from := uint64(0); from < n; from += 1000 {
		require.NoError(b, c.WriteBlocks(ctx, chainID, mixBlocks(from, 1000, 20, 2)))
	}
	for _, t := range merged {
		require.NoError(b, c.execSQL(ctx, "OPTIMIZE TABLE "+t+" FINAL"))
	}
	return c
}

// renamed is a statement reading another table.
type renamedStmt struct {
	sql  string
	args []any
}

func (s renamedStmt) toSQL() (string, []any) { return s.sql, s.args }

func renamed(s statement, from, to string) statement {
	sql, args := s.toSQL()
	return renamedStmt{strings.Replace(sql, "FROM "+from+" FINAL", "FROM "+to+" FINAL", 1), args}
}

func readCount(b *testing.B, c *ClickHouse, s statement) int {
	n := 0
	require.NoError(b, c.query(context.Background(), "bench", s, func(driver.Rows) error { n++; return nil }))
	return n
}

// BenchmarkScatteredReads times a read of 25 scattered positions of
// transactions (the statement of TransactionsAt: a page of an address's
// transactions or token transfers) read again, and a scan of every log,
// under the read settings tideline sends (readSettings) and with one of
// them back at the server's default: the cache of decompressed blocks
// (newer servers have it off by default; with it off every read is a
// miss, as a first read is) and the read buffer of each column (1 MiB by
// default, filled at every seek). 10,000 default-mix blocks merged into
// one part.
//
//	go test -run '^$' -bench BenchmarkScatteredReads -benchtime 50x ./pkg/storage/
//	TIDELINE_TEST_CLICKHOUSE=chdb go test -run '^$' -bench BenchmarkScatteredReads -benchtime 50x ./pkg/storage/
func BenchmarkScatteredReads(b *testing.B) {
	const chainID, n = "p", 10_000
	c := benchMixIndex(b, chainID, n, tableTransactions, tableLogs)
	ctx := context.Background()
	r := rand.New(rand.NewPCG(1, 2))
	ps := make([]Position, 25)
	for i := range ps {
		ps[i] = Position{Block: r.Uint64N(n), Index: uint32(r.IntN(20))}
	}
	slices.SortFunc(ps, func(a, b Position) int { return cmp.Or(cmp.Compare(a.Block, b.Block), cmp.Compare(a.Index, b.Index)) })
	ps = slices.Compact(ps)
	positions, positionsArgs := transactionsAtQuery{chainID, ps, txAllColumns}.toSQL()
	scan := "SELECT count(), sum(length(data)), sum(length(raw)) FROM logs WHERE chain_id = ?"
	read := func(b *testing.B, settings clickhouse.Settings, sql string, args []any) int {
		rows, err := c.conn.Query(clickhouse.Context(ctx, clickhouse.WithSettings(settings)), sql, args...)
		require.NoError(b, err)
		got := 0
		for rows.Next() {
			got++
		}
		require.NoError(b, rows.Err())
		require.NoError(b, rows.Close())
		return got
	}
	variants := []struct {
		name     string
		settings clickhouse.Settings
	}{
		{"tideline's", readSettings(600)},
		{"use_uncompressed_cache=0", with(readSettings(600), "use_uncompressed_cache", 0)},
		{"max_read_buffer_size=1MiB", with(readSettings(600), "max_read_buffer_size", 1<<20)},
		{"both at the default", with(with(readSettings(600), "use_uncompressed_cache", 0), "max_read_buffer_size", 1<<20)},
	}
	for _, v := range variants {
		b.Run("positions again/"+v.name, func(b *testing.B) {
			read(b, v.settings, positions, positionsArgs) // the first read fills the cache when it is on
			for b.Loop() {
				require.Equal(b, len(ps), read(b, v.settings, positions, positionsArgs))
			}
		})
	}
	for _, v := range variants {
		b.Run("scan/"+v.name, func(b *testing.B) {
			for b.Loop() {
				require.Equal(b, 1, read(b, v.settings, scan, []any{chainID}))
			}
		})
	}
}

// with is settings with one of them changed.
func with(s clickhouse.Settings, name string, value any) clickhouse.Settings {
	out := maps.Clone(s)
	out[name] = value
	return out
}
