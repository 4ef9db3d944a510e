package storage

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/internal/testkit"
	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/config"
)

// benchOpen opens a migrated store on a database of its own, dropped when
// the benchmark ends so that millions of rows do not pile up on the test
// server.
func benchOpen(b *testing.B) *ClickHouse {
	b.Helper()
	ctx := context.Background()
	cfg := config.ClickHouse{Addr: testCH.Addr, Protocol: testCH.Protocol, Database: testkit.Database(b, "b_") + fmt.Sprintf("_%d", time.Now().UnixNano()),
		QueryTimeout: 10 * time.Minute}
	c, err := Open(ctx, cfg, zap.NewNop())
	require.NoError(b, err)
	require.NoError(b, c.Migrate(ctx))
	b.Cleanup(func() {
		require.NoError(b, c.execSQL(context.Background(), "DROP DATABASE "+cfg.Database))
		require.NoError(b, c.Close())
	})
	return c
}

// fillIndexed marks [0, n) indexed for chainID except the holes, with one
// INSERT … SELECT on the server (seconds for ten million rows; the rows
// never cross the wire).
func fillIndexed(b *testing.B, c *ClickHouse, chainID string, n uint64, holes []uint64) {
	b.Helper()
	hs := []string{fmt.Sprint(uint64(1) << 63)} // never below n: keeps the list non-empty
	for _, h := range holes {
		hs = append(hs, fmt.Sprint(h))
	}
	start := time.Now()
	require.NoError(b, c.execSQL(context.Background(), fmt.Sprintf(
		"INSERT INTO indexed_heights (chain_id, number, hash, indexed_at, version)"+
			" SELECT '%s', number, '0x', toDateTime(1700000000), 1 FROM numbers(%d) WHERE number NOT IN (%s)",
		chainID, n, strings.Join(hs, ", "))))
	b.Logf("filled %d heights of chain %q in %s", n, chainID, time.Since(start).Round(time.Millisecond))
}

// BenchmarkReadsAtScale times the scheduler's reads of indexed_heights
// with 1M and 10M indexed heights of one chain (plus a neighbour chain of
// the same size, so chain_id must be used) and a few holes:
//
//	0 ……… 0.9n-1 | hole 0.9n, 0.9n+1 | 0.9n+2 ……… n-5001 | holes n-5000..n-4991 | … n-1
//
// The ops are what the scheduler and the activities ask: IsIndexed (one
// height), LastIndexed, Watermark from the start (cold: no saved value)
// and from a saved value just below the first hole (warm, the activity's
// usual call), MissingHeights / MissingRanges over the whole chain (the
// gap scan), CountIndexed over a window of ten 1,000-height ranges (the
// scheduler's in-flight window) and over the whole chain.
func BenchmarkReadsAtScale(b *testing.B) {
	for _, n := range []uint64{1_000_000, 10_000_000} {
		b.Run(fmt.Sprintf("heights=%dM", n/1_000_000), func(b *testing.B) {
			c := benchOpen(b)
			ctx := context.Background()
			firstHole := n / 10 * 9
			holes := []uint64{firstHole, firstHole + 1}
			for h := n - 5000; h < n-4990; h++ {
				holes = append(holes, h)
			}
			fillIndexed(b, c, "bench", n, holes)
			fillIndexed(b, c, "other", n, nil)

			window := make([]chaindata.HeightRange, 10)
			for i := range window {
				from := n - 10_000 + uint64(i)*1000
				window[i] = chaindata.HeightRange{From: from, To: from + 999}
			}
			ops := []struct {
				name  string
				run   func() (any, error)
				check func(any)
			}{
				{"IsIndexed", func() (any, error) { return c.IsIndexed(ctx, "bench", n/2) },
					func(v any) { require.Equal(b, true, v) }},
				{"LastIndexed", func() (any, error) { h, _, err := c.LastIndexed(ctx, "bench"); return h, err },
					func(v any) { require.Equal(b, n-1, v) }},
				{"Watermark/cold", func() (any, error) { h, _, err := c.Watermark(ctx, "bench", 0); return h, err },
					func(v any) { require.Equal(b, firstHole-1, v) }},
				{"Watermark/warm", func() (any, error) { h, _, err := c.Watermark(ctx, "bench", firstHole-1000); return h, err },
					func(v any) { require.Equal(b, firstHole-1, v) }},
				{"MissingHeights/all", func() (any, error) { return c.MissingHeights(ctx, "bench", 0, n-1, 1000) },
					func(v any) { require.Equal(b, holes, v) }},
				{"MissingRanges/all", func() (any, error) { return c.MissingRanges(ctx, "bench", 0, n-1, 1000) },
					func(v any) { require.Equal(b, chaindata.ToRanges(holes), v) }},
				{"CountIndexed/window10x1000", func() (any, error) { return c.CountIndexed(ctx, "bench", window) },
					func(v any) {
						got := v.([]uint64)
						require.Equal(b, uint64(990), got[5]) // n-5000 … n-4001 holds the ten holes
						require.Equal(b, uint64(1000), got[0])
					}},
				{"CountIndexed/all", func() (any, error) {
					return c.CountIndexed(ctx, "bench", []chaindata.HeightRange{{From: 0, To: n - 1}})
				}, func(v any) { require.Equal(b, []uint64{n - uint64(len(holes))}, v) }},
			}
			// Scans first without the chunk cache (emptied before every
			// call: the first scan of a chain), then with it (every later
			// scan: GapScan runs every minute).
			scans := map[string]bool{"Watermark/cold": true, "Watermark/warm": true, "MissingHeights/all": true, "MissingRanges/all": true}
			for _, op := range ops {
				if !scans[op.name] {
					continue
				}
				b.Run(op.name+"/first-scan", func(b *testing.B) {
					for b.Loop() {
						b.StopTimer()
						require.NoError(b, c.execSQL(ctx, "TRUNCATE TABLE "+tableIndexedChunks))
						b.StartTimer()
						v, err := op.run()
						require.NoError(b, err)
						op.check(v)
					}
					b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/op")
				})
			}
			for _, op := range ops {
				b.Run(op.name, func(b *testing.B) {
					v, err := op.run() // warm the caches once, and check the answer
					require.NoError(b, err)
					op.check(v)
					for b.Loop() {
						if _, err := op.run(); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/op")
				})
			}
		})
	}
}
