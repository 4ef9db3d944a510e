package storage

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The floor is the start height until retention prunes at or above it,
// then the height above the pruned one; a pruned height below the start
// (retention of a chain whose start moved up) and the top height (no
// height above it) leave the start.
func TestFloor(t *testing.T) {
	for _, c := range []struct {
		start, pruned uint64
		has           bool
		want          uint64
	}{
		{start: 100, want: 100},
		{start: 100, pruned: 500, has: false, want: 100},
		{start: 100, pruned: 500, has: true, want: 501},
		{start: 100, pruned: 100, has: true, want: 101},
		{start: 100, pruned: 99, has: true, want: 100},
		{start: 0, pruned: ^uint64(0), has: true, want: 0},
	} {
		require.Equal(t, c.want, Floor(c.start, c.pruned, c.has), "%+v", c)
	}
}
