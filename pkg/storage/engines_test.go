package storage

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/localstack"
)

// bulkChunk is how many heights one WriteBlocks call of the bulk write
// holds: the range path's chunk (index.write_batch's default).
const bulkChunk = 500

// writeBulk writes heights [1, heights] of blocks with token transfers and
// call traces, bulkChunk a call, into a new database on ch, with versions
// from a clock set to one value, and returns the digest of every table
// (tableDigests) and the time the writes took.
func writeBulk(tb testing.TB, ch *localstack.ClickHouse, database string, heights int) (map[string][2]uint64, time.Duration) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	c, err := Open(ctx, config.ClickHouse{Addr: ch.Addr, Protocol: ch.Protocol, Database: database, QueryTimeout: 5 * time.Minute}, zap.NewNop())
	require.NoError(tb, err)
	defer c.Close()
	require.NoError(tb, c.Migrate(ctx))
	c.clock.last.Store(1 << 62) // above any wall clock: the same versions on every engine
	var took time.Duration
	for from := 1; from <= heights; from += bulkChunk {
		blocks := make([]*chaindata.BlockData, 0, bulkChunk)
		for n := from; n < from+bulkChunk && n <= heights; n++ {
			blocks = append(blocks, withTraces(transferBlock(uint64(n))))
		}
		start := time.Now()
		require.NoError(tb, c.WriteBlocks(ctx, "bulk", blocks))
		took += time.Since(start)
	}
	return tableDigests(tb, c), took
}

// bulkTestHeights is the bulk write's size in the test: 1,000 heights,
// two WriteBlocks calls (so rows of one table come from more than one
// insert), 6,000 token transfers and 4,000 trace frames. More heights
// repeat the same rows' shapes: at 5,000 the test took 51 s of `make
// test` on the three engines. BenchmarkBulkWriteOnEveryEngine runs the
// same at 20,000 (docs/performance.md).
const bulkTestHeights = 1_000

// The same bulk write stores the same rows, versions included, on the
// server (18.16) and on the modern engine at the compose file's
// compatibility and at its own defaults. The server lane runs it (it
// starts the modern engines itself); BenchmarkBulkWriteOnEveryEngine runs
// it with each engine's rate.
func TestBulkWriteStoresTheSameRowsOnEveryEngine(t *testing.T) {
	if !testCH.Native() {
		t.Skip("compares the modern engine with the server: runs on the server lane, which starts both")
	}
	want, _ := writeBulk(t, testCH, "t_bulk_server", bulkTestHeights)
	require.Positive(t, want["token_transfers"][0])
	require.Positive(t, want["traces"][0])
	for _, compat := range []string{"24.8", ""} {
		ch, err := localstack.StartChDB(t.TempDir(), localstack.ChDBOptions{Compatibility: compat})
		require.NoError(t, err)
		got, _ := writeBulk(t, ch, "t_bulk", bulkTestHeights)
		ch.Stop()
		require.Equal(t, want, got, "%s: the rows the server stored (count, hash of every column per table)", ch.Engine)
	}
}

// BenchmarkBulkWriteOnEveryEngine writes BULK_HEIGHTS (default 20,000)
// heights with token transfers and traces on each engine, fails if any
// table differs from the server's, and reports each engine's heights/s of
// WriteBlocks time. Run with -benchtime 1x.
func BenchmarkBulkWriteOnEveryEngine(b *testing.B) {
	heights := 20_000
	if v := os.Getenv("BULK_HEIGHTS"); v != "" {
		var err error
		heights, err = strconv.Atoi(v)
		require.NoError(b, err)
	}
	for range b.N {
		want, took := writeBulk(b, testCH, "b_bulk_server", heights)
		b.ReportMetric(float64(heights)/took.Seconds(), "server-heights/s")
		for _, compat := range []string{"24.8", ""} {
			ch, err := localstack.StartChDB(b.TempDir(), localstack.ChDBOptions{Compatibility: compat})
			require.NoError(b, err)
			got, took := writeBulk(b, ch, "b_bulk", heights)
			ch.Stop()
			require.Equal(b, want, got, ch.Engine)
			name := "chdb-defaults-heights/s"
			if compat != "" {
				name = "chdb-" + compat + "-heights/s"
			}
			b.ReportMetric(float64(heights)/took.Seconds(), name)
			b.Logf("%s: %d tables equal to the server's; %d token transfers, %d trace frames",
				ch.Engine, len(got), got["token_transfers"][0], got["traces"][0])
		}
	}
}
