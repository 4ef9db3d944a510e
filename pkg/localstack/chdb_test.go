package localstack

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/stretchr/testify/require"
)

// The modern engine answers as a server does for what clickhouse-go's
// HTTP protocol sends: a request's settings end with it (the profile's
// compatibility stays), errors are typed, a large insert arrives whole in
// compressed blocks, and the Native answer decodes for every type the
// walker knows.
func TestChDBServesTheHTTPInterface(t *testing.T) {
	ch, err := StartChDB(t.TempDir(), ChDBOptions{Compatibility: "24.8"})
	require.NoError(t, err)
	t.Cleanup(ch.Stop)
	require.Equal(t, ProtocolHTTP, ch.Protocol)
	require.Contains(t, ch.Engine, "compatibility 24.8")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, err := clickhouse.Open(&clickhouse.Options{Addr: []string{ch.Addr}, Protocol: clickhouse.HTTP,
		Compression: &clickhouse.Compression{Method: clickhouse.CompressionLZ4}})
	require.NoError(t, err)
	defer conn.Close()

	setting := func(ctx context.Context, name string) string {
		var v string
		require.NoError(t, conn.QueryRow(ctx, "SELECT toString(getSetting(?))", name).Scan(&v))
		return v
	}
	// 24.8 had asynchronous inserts off; the engine (26.7) has them on.
	require.Equal(t, "false", setting(ctx, "async_insert"))
	on := clickhouse.Context(ctx, clickhouse.WithSettings(clickhouse.Settings{"async_insert": 1, "max_threads": 1}))
	require.Equal(t, "true", setting(on, "async_insert"))
	require.Equal(t, "false", setting(ctx, "async_insert"), "a request's setting ends with it")
	require.NotEqual(t, "1", setting(ctx, "max_threads"))

	err = conn.Exec(ctx, "SELECT * FROM no_such_table")
	var exc *clickhouse.Exception
	require.True(t, errors.As(err, &exc), "%v", err)
	require.Equal(t, int32(60), exc.Code)

	require.NoError(t, conn.Exec(ctx, "CREATE TABLE default.big (n UInt64, s String) ENGINE = MergeTree ORDER BY n"))
	batch, err := conn.PrepareBatch(ctx, "INSERT INTO default.big (n, s)")
	require.NoError(t, err)
	const rows = 300_000 // megabytes of compressed blocks; 2570 (0a 0a …) among the values
	for i := range uint64(rows) {
		require.NoError(t, batch.Append(i, "x"))
	}
	require.NoError(t, batch.Send())
	var n, sum uint64
	require.NoError(t, conn.QueryRow(ctx, "SELECT count(), sum(n) FROM default.big").Scan(&n, &sum))
	require.Equal(t, uint64(rows), n)
	require.Equal(t, uint64(rows*(rows-1)/2), sum)

	var (
		arr   []string
		null  *string
		tup   []any
		m     map[string]uint64
		when  time.Time
		fixed string
		low   string
	)
	require.NoError(t, conn.QueryRow(ctx, "SELECT ['a', 'b'], CAST(NULL AS Nullable(String)), tuple(toUInt8(1), 'x'),"+
		" map('k', toUInt64(7)), toDateTime(86400, 'UTC'), toFixedString('ab', 2), toLowCardinality('lc')").
		Scan(&arr, &null, &tup, &m, &when, &fixed, &low))
	require.Equal(t, []string{"a", "b"}, arr)
	require.Nil(t, null)
	require.Equal(t, []any{uint8(1), "x"}, tup)
	require.Equal(t, map[string]uint64{"k": 7}, m)
	require.Equal(t, int64(86400), when.Unix())
	require.Equal(t, "ab", fixed)
	require.Equal(t, "lc", low)
}

// At its own defaults the engine is the modern one as it ships.
func TestChDBAtItsDefaults(t *testing.T) {
	ch, err := StartChDB(t.TempDir(), ChDBOptions{})
	require.NoError(t, err)
	t.Cleanup(ch.Stop)
	conn, err := clickhouse.Open(&clickhouse.Options{Addr: []string{ch.Addr}, Protocol: clickhouse.HTTP})
	require.NoError(t, err)
	defer conn.Close()
	var async, version string
	require.NoError(t, conn.QueryRow(context.Background(), "SELECT toString(getSetting('async_insert')), version()").Scan(&async, &version))
	require.Equal(t, "true", async)
	require.Equal(t, "chdb "+version+", compatibility none (the engine's defaults)", ch.Engine)
}
