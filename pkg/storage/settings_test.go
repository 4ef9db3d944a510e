package storage

import (
	"testing"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/stretchr/testify/require"
)

func TestParseServerVersion(t *testing.T) {
	for in, want := range map[string]serverVersion{
		"18.16.1":       {18, 16},
		"26.7.1.1":      {26, 7},
		"24.8.4.13-lts": {24, 8},
		" 23.9 ":        {23, 9},
	} {
		got, err := parseServerVersion(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, bad := range []string{"", "26", "x.1", "26.y.1", "-1.2"} {
		_, err := parseServerVersion(bad)
		require.Error(t, err, bad)
	}
}

// 18.16 rejects unknown settings, so it gets none; a modern server gets
// every one, explicitly synchronous.
func TestInsertSettingsByServerVersion(t *testing.T) {
	cases := []struct {
		version string
		want    clickhouse.Settings
	}{
		{"18.16.1", clickhouse.Settings{}},
		{"20.12.1", clickhouse.Settings{"optimize_on_insert": 0}},
		{"21.10.9", clickhouse.Settings{"optimize_on_insert": 0}},
		{"21.11.1", clickhouse.Settings{"optimize_on_insert": 0, "async_insert": 0, "wait_for_async_insert": 1}},
		{"26.7.1.1", clickhouse.Settings{"optimize_on_insert": 0, "async_insert": 0, "wait_for_async_insert": 1}},
		{"100.1.1", clickhouse.Settings{"optimize_on_insert": 0, "async_insert": 0, "wait_for_async_insert": 1}},
	}
	for _, tc := range cases {
		v, err := parseServerVersion(tc.version)
		require.NoError(t, err)
		require.Equal(t, tc.want, insertSettings(v), tc.version)
	}
}

// Open asks the server its version once and keeps the settings it knows;
// the handshake's version is a second, independent source. Against 18.16
// (the server here) a setting it does not know fails the insert, which is
// why they are filtered.
func TestOpenDetectsServerVersion(t *testing.T) {
	c := openTest(t)
	hs, err := c.conn.ServerVersion()
	require.NoError(t, err)
	require.Equal(t, serverVersion{int(hs.Version.Major), int(hs.Version.Minor)}, c.server)
	require.Equal(t, insertSettings(c.server), c.settings)

	if c.server.atLeast(serverVersion{21, 11}) {
		return // a modern server knows every setting of the table
	}
	ctx := clickhouse.Context(testContext(t), clickhouse.WithSettings(clickhouse.Settings{"async_insert": 0}))
	_, err = c.conn.PrepareBatch(ctx, "INSERT INTO chain_state (chain_id)")
	var exc *clickhouse.Exception
	require.ErrorAs(t, err, &exc)
	require.Equal(t, int32(115), exc.Code) // UNKNOWN_SETTING
}

// Every read reaches the server with its cache of decompressed blocks on
// and a small read buffer (readSettings), whatever the server's defaults:
// 18.16's cache is on, newer servers' off, and the modern lanes run this
// test with theirs.
func TestReadsUseTheReadSettings(t *testing.T) {
	c := openTest(t)
	var got []string
	err := c.query(testContext(t), "reading the settings",
		renamedStmt{sql: "SELECT value FROM system.settings WHERE name IN ('max_read_buffer_size', 'use_uncompressed_cache') ORDER BY name"},
		func(r driver.Rows) error {
			var v string
			got = append(got, v)
			return r.Scan(&got[len(got)-1])
		})
	require.NoError(t, err)
	require.Equal(t, []string{"32768", "1"}, got)
}
