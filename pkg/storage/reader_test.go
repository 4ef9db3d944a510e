package storage

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"github.com/tideline-dev/tideline/internal/testkit"
	"github.com/tideline-dev/tideline/pkg/localstack"
)

// The query API's store opens and reads as the read-only user (readonly =
// 1, the user docs/querying.md sets up): it creates nothing, asks nothing
// of the server but its reads, and sends no setting such a user may not
// change.
func TestReaderRunsAsTheReadOnlyUser(t *testing.T) {
	testkit.ServerOnly(t, testCH, "users and readonly profiles: the modern engine has no users")
	ctx := testContext(t)
	c := openTest(t)
	require.NoError(t, c.WriteBlocks(ctx, "1", blocksOf(sampleBlock(1), sampleBlock(2))))
	require.NoError(t, c.SaveState(ctx, "1", StateWatermark, 2))
	cfg := testConfig(t)
	cfg.Username = localstack.ReadOnlyUser
	r, err := OpenReader(ctx, cfg, zaptest.NewLogger(t))
	require.NoError(t, err)
	t.Cleanup(func() { r.Close() })
	st, err := r.ReadState(ctx, "1")
	require.NoError(t, err)
	require.Equal(t, uint64(2), st.Watermark)
	bs, err := r.BlocksAt(ctx, "1", []uint64{1, 2})
	require.NoError(t, err)
	require.Len(t, bs, 2)
	recs, err := r.Records().ChainRecords(ctx)
	require.NoError(t, err)
	require.Empty(t, recs)

	// The same user cannot open the indexer's store: it would create the
	// database and insert.
	cfg.Database = cfg.Database + "_new"
	_, err = Open(ctx, cfg, zaptest.NewLogger(t))
	require.Error(t, err)
}
