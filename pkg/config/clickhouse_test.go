package config

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The clickhouse section's own check (storage.Open applies it) names the
// key of the first bad setting, never the password.
func TestConfigValidateNamesKey(t *testing.T) {
	good := ClickHouse{Addr: "127.0.0.1:9000", Database: "tideline"}
	require.NoError(t, good.Validate())

	cases := []struct {
		name   string
		mutate func(*ClickHouse)
		key    string
	}{
		{"missing addr", func(c *ClickHouse) { c.Addr = "" }, "clickhouse.addr"},
		{"addr without port", func(c *ClickHouse) { c.Addr = "localhost" }, "clickhouse.addr"},
		{"addr with bad port", func(c *ClickHouse) { c.Addr = "localhost:http" }, "clickhouse.addr"},
		{"addr without host", func(c *ClickHouse) { c.Addr = ":9000" }, "clickhouse.addr"},
		{"missing database", func(c *ClickHouse) { c.Database = "" }, "clickhouse.database"},
		{"database needing quotes", func(c *ClickHouse) { c.Database = "a-b; DROP" }, "clickhouse.database"},
		{"negative dial timeout", func(c *ClickHouse) { c.DialTimeout = -time.Second }, "clickhouse.dial_timeout"},
		{"negative query timeout", func(c *ClickHouse) { c.QueryTimeout = -time.Second }, "clickhouse.query_timeout"},
		{"negative migrate timeout", func(c *ClickHouse) { c.MigrateTimeout = -time.Second }, "clickhouse.migrate_timeout"},
		{"unknown compression", func(c *ClickHouse) { c.Compression = "zstd" }, "clickhouse.compression"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := good
			cfg.Password = "hunter2-secret"
			tc.mutate(&cfg)
			err := cfg.Validate()
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.key+":")
			require.NotContains(t, err.Error(), "hunter2-secret")
		})
	}
}

func TestConfigStringHidesPassword(t *testing.T) {
	cfg := ClickHouse{Addr: "h:1", Database: "d", Username: "u", Password: "hunter2-secret"}
	require.NotContains(t, cfg.String(), "hunter2-secret")
	require.NotContains(t, fmt.Sprintf("%v %+v %s", cfg, cfg, cfg), "hunter2-secret")
}
