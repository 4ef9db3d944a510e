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

// The start-up's lags count in the p95 of every sample; the figure from the
// live edge on leaves out what came before the first lag of at most one.
func TestLagAfterTheLiveEdge(t *testing.T) {
	s := newLagSampler()
	n, _, _ := s.afterEdge()
	require.Zero(t, n, "no sample yet")
	for _, lag := range []uint64{15, 9, 5, 3} {
		s.record(lag)
	}
	n, _, _ = s.afterEdge()
	require.Zero(t, n, "never at the edge yet")
	for _, lag := range []uint64{1, 2, 0, 1, 4, 1} {
		s.record(lag)
	}
	n, p95, maxLag := s.afterEdge()
	require.Equal(t, 6, n)
	require.Equal(t, uint64(4), p95)
	require.Equal(t, uint64(4), maxLag)
	all, allMax := s.result()
	require.Equal(t, uint64(15), all)
	require.Equal(t, uint64(15), allMax)
}
