package storage

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

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
	c := benchOpen(b)
	ctx := context.Background()
	const chainID, n = "p", 10_000
	for from := uint64(0); from < n; from += 1000 {
		require.NoError(b, c.WriteBlocks(ctx, chainID, mixBlocks(from, 1000, 20, 2)))
	}
	for _, t := range []string{tableBlocks, tableTransactions} {
		require.NoError(b, c.execSQL(ctx, "OPTIMIZE TABLE "+t+" FINAL"))
	}
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
				got := readCount(b, c, renamed(transactionsAtQuery{chainID, []Position{p}, false}, tableTransactions, txs))
				require.Equal(b, 1, got)
			}
		})
	}
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
