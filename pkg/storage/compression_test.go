package storage

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"
)

func TestEffectiveCompression(t *testing.T) {
	cases := []struct {
		setting, addr, want string
	}{
		{"", "127.0.0.1:9000", CompressionNone},
		{"auto", "127.0.0.1:9000", CompressionNone},
		{"auto", "127.0.0.53:9000", CompressionNone},
		{"auto", "[::1]:9000", CompressionNone},
		{"auto", "localhost:9000", CompressionNone},
		{"auto", "LocalHost:9000", CompressionNone},
		{"auto", "10.0.0.7:9000", CompressionLZ4},
		{"auto", "clickhouse.internal:9000", CompressionLZ4}, // a name to resolve counts as remote
		{"", "[2001:db8::1]:9000", CompressionLZ4},
		{"lz4", "127.0.0.1:9000", CompressionLZ4},
		{"none", "10.0.0.7:9000", CompressionNone},
	}
	for _, tc := range cases {
		got, err := effectiveCompression(tc.setting, tc.addr)
		require.NoError(t, err, "%q at %s", tc.setting, tc.addr)
		require.Equal(t, tc.want, got, "%q at %s", tc.setting, tc.addr)
	}
	_, err := effectiveCompression("zstd", "127.0.0.1:9000")
	require.ErrorContains(t, err, "clickhouse.compression")
	require.Nil(t, driverCompression(CompressionNone))
	require.NotNil(t, driverCompression(CompressionLZ4))
}

// Both ways of sending blocks are accepted by the server and write the
// same rows: the catch-up's store on loopback sends them uncompressed.
func TestWriteBlocksWithEachCompression(t *testing.T) {
	for _, setting := range []string{CompressionLZ4, CompressionNone} {
		t.Run(setting, func(t *testing.T) {
			ctx := testContext(t)
			cfg := testConfig(t)
			cfg.Compression = setting
			c, err := Open(ctx, cfg, zaptest.NewLogger(t))
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, c.Close()) })
			require.NoError(t, c.Migrate(ctx))

			in := sampleBlock(2_000_321)
			require.NoError(t, c.WriteBlocks(ctx, "1", blocksOf(in)))
			got := readBlockData(t, c, "1", in.Block.Number)
			require.Equal(t, in.Block, got.Block)
			require.Equal(t, in.Transactions, got.Transactions)
			require.Equal(t, in.Logs, got.Logs)
		})
	}
}
