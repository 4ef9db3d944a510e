package storage

import (
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// DiskUsage sees the data written, the parts a merge replaced, the heights
// and, for this server on loopback (18.16: no system.disks), the free space
// of its data's file system.
func TestDiskUsage(t *testing.T) {
	c := openTest(t)
	ctx := testContext(t)

	empty, err := c.Retention().DiskUsage(ctx)
	require.NoError(t, err)
	require.Zero(t, empty.Heights)
	require.Zero(t, empty.BytesPerHeight())

	for n := uint64(10); n < 13; n++ { // one insert per height: three parts a table
		require.NoError(t, c.WriteBlocks(ctx, "1", blocksOf(sampleBlock(n))))
	}
	u, err := c.Retention().DiskUsage(ctx)
	require.NoError(t, err)
	require.Equal(t, uint64(3), u.Heights)
	require.Positive(t, u.LiveBytes)
	require.InDelta(t, float64(u.LiveBytes)/3, u.BytesPerHeight(), 1)

	require.True(t, u.FreeKnown, "a loopback server's data disk is asked by its parts' path")
	var st syscall.Statfs_t
	require.NoError(t, syscall.Statfs(testCH.Dir, &st))
	free := st.Bavail * uint64(st.Bsize)
	require.InDelta(t, float64(free), float64(u.FreeBytes), 1<<30, "free space of the server's data directory")

	mergeFully(t, c, tableIndexedHeights)
	after, err := c.Retention().DiskUsage(ctx)
	require.NoError(t, err)
	require.Positive(t, after.ReplacedBytes, "the three parts the merge replaced stay for old_parts_lifetime")
	require.Equal(t, uint64(3), after.Heights)
}
