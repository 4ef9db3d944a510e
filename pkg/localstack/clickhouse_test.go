package localstack

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A later fault test restarts ClickHouse mid-run and expects the indexer to
// reconnect to the same address and find its data, so Restart must keep
// both ports and data.
func TestClickHouseStartRestartKeepsAddressAndData(t *testing.T) {
	dir := t.TempDir()
	ch, err := StartClickHouse(dir)
	require.NoError(t, err)
	t.Cleanup(ch.Stop)

	cfg, err := os.ReadFile(filepath.Join(dir, "config.xml"))
	require.NoError(t, err)
	require.Contains(t, string(cfg), "<listen_host>127.0.0.1</listen_host>")
	require.NotContains(t, string(cfg), "0.0.0.0")
	require.NotContains(t, string(cfg), "<part_log>", "the part log is off unless asked for")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := clickhouse.Open(&clickhouse.Options{Addr: []string{ch.Addr}})
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.Exec(ctx, "CREATE TABLE IF NOT EXISTS default.t (n UInt64) ENGINE = MergeTree ORDER BY n"))
	batch, err := conn.PrepareBatch(ctx, "INSERT INTO default.t (n)")
	require.NoError(t, err)
	require.NoError(t, batch.Append(uint64(7)))
	require.NoError(t, batch.Send())

	addr, httpAddr, pid := ch.Addr, ch.HTTPAddr, ch.Process.Pid()
	require.NoError(t, ch.Restart())
	require.Equal(t, addr, ch.Addr)
	require.Equal(t, httpAddr, ch.HTTPAddr)
	require.NotEqual(t, pid, ch.Process.Pid())

	// The pool's old connections died with the server; a fresh client
	// shows what a reconnecting indexer sees.
	conn2, err := clickhouse.Open(&clickhouse.Options{Addr: []string{ch.Addr}})
	require.NoError(t, err)
	defer conn2.Close()
	var n uint64
	require.NoError(t, conn2.QueryRow(ctx, "SELECT sum(n) FROM default.t").Scan(&n))
	require.Equal(t, uint64(7), n)

	ch.Stop()
	require.True(t, ch.Process.Exited())
}

// A config the server rejects must fail the start with the server's own
// words, not a bare timeout.
func TestClickHouseStartFailureShowsLogTail(t *testing.T) {
	dir := t.TempDir()
	ch, err := StartClickHouse(dir)
	require.NoError(t, err)
	ch.Stop()

	// Point the data path at a regular file so the server cannot start.
	blocker := filepath.Join(dir, "not-a-dir")
	require.NoError(t, os.WriteFile(blocker, []byte("x"), 0o644))
	cfg, err := os.ReadFile(ch.configPath)
	require.NoError(t, err)
	bad := strings.Replace(string(cfg), "<path>"+dir+"/data/</path>", "<path>"+blocker+"/</path>", 1)
	require.NotEqual(t, string(cfg), bad)
	require.NoError(t, os.WriteFile(ch.configPath, []byte(bad), 0o644))

	err = ch.Restart()
	require.Error(t, err)
	require.Contains(t, err.Error(), "--- log tail ---")
	require.Contains(t, err.Error(), ch.logPath)
	require.True(t, ch.Process.Exited())
}

// bench-catchup reads the bytes merges rewrote from system.part_log, which
// PartLog turns on: inserts and merges show there once the logs are
// flushed, with 18.16's event numbers (1 a new part, 2 a merge).
func TestClickHousePartLog(t *testing.T) {
	ch, err := StartClickHouseWith(t.TempDir(), ClickHouseOptions{PartLog: true})
	require.NoError(t, err)
	t.Cleanup(ch.Stop)
	conn, err := clickhouse.Open(&clickhouse.Options{Addr: []string{ch.Addr}, ReadTimeout: 30 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })

	ctx := t.Context()
	require.NoError(t, conn.Exec(ctx, "CREATE TABLE default.t (n UInt64) ENGINE = MergeTree ORDER BY n"))
	for range 2 {
		require.NoError(t, conn.Exec(ctx, "INSERT INTO default.t SELECT number FROM system.numbers LIMIT 1000"))
	}
	require.NoError(t, conn.Exec(ctx, "OPTIMIZE TABLE default.t FINAL"))
	// OPTIMIZE returns at once, without merging, when a background merge
	// already holds the two parts, and that merge is logged only when it
	// ends: wait for the merge's row rather than expecting it on return.
	var inserted, merged uint64
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		require.NoError(c, conn.Exec(ctx, "SYSTEM FLUSH LOGS"))
		require.NoError(c, conn.QueryRow(ctx, `SELECT countIf(toInt8(event_type) = 1), countIf(toInt8(event_type) = 2)
			FROM system.part_log WHERE database = 'default' AND table = 't'`).Scan(&inserted, &merged))
		assert.NotZero(c, merged, "no merge in system.part_log")
	}, 30*time.Second, 100*time.Millisecond)
	require.Equal(t, uint64(2), inserted)
	require.Equal(t, uint64(1), merged)
}

// OldPartsLifetime reaches the server: parts a merge replaced leave the
// disk within seconds instead of the default 8 minutes.
func TestClickHouseOldPartsLifetime(t *testing.T) {
	dir := t.TempDir()
	ch, err := StartClickHouseWith(dir, ClickHouseOptions{OldPartsLifetime: 2 * time.Second})
	require.NoError(t, err)
	t.Cleanup(ch.Stop)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := clickhouse.Open(&clickhouse.Options{Addr: []string{ch.Addr}})
	require.NoError(t, err)
	defer conn.Close()
	var setting string
	require.NoError(t, conn.QueryRow(ctx,
		"SELECT value FROM system.merge_tree_settings WHERE name = 'old_parts_lifetime'").Scan(&setting))
	require.Equal(t, "2", setting)

	require.NoError(t, conn.Exec(ctx, "CREATE TABLE default.p (n UInt64) ENGINE = MergeTree ORDER BY n"))
	for i := range 3 {
		batch, err := conn.PrepareBatch(ctx, "INSERT INTO default.p (n)")
		require.NoError(t, err)
		require.NoError(t, batch.Append(uint64(i)))
		require.NoError(t, batch.Send())
	}
	// OPTIMIZE returns without merging when a background merge holds the
	// parts (TestClickHousePartLog), so it is repeated until one is left.
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		if !assert.NoError(ct, conn.Exec(ctx, "OPTIMIZE TABLE default.p FINAL")) {
			return
		}
		var active uint64
		if assert.NoError(ct, conn.QueryRow(ctx,
			"SELECT countIf(active) FROM system.parts WHERE database = 'default' AND table = 'p'").Scan(&active)) {
			assert.Equal(ct, uint64(1), active, "the three parts merged into one")
		}
	}, 30*time.Second, 50*time.Millisecond)
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		var old uint64
		if assert.NoError(ct, conn.QueryRow(ctx,
			"SELECT countIf(NOT active) FROM system.parts WHERE database = 'default' AND table = 'p'").Scan(&old)) {
			assert.Zero(ct, old, "the replaced parts are still on disk")
		}
	}, 45*time.Second, 200*time.Millisecond)
}
