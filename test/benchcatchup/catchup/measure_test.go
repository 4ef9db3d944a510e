package catchup

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestLiveEdge(t *testing.T) {
	for bt, want := range map[time.Duration]uint64{
		12 * time.Second: 1, 2 * time.Second: 1, time.Second: 1,
		500 * time.Millisecond: 2, 300 * time.Millisecond: 4, 250 * time.Millisecond: 4,
	} {
		require.Equal(t, want, liveEdge(bt), bt)
	}
}
