package catchup

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPercentileIsNearestRank(t *testing.T) {
	require.Zero(t, percentile(nil, 95))
	require.Equal(t, uint64(7), percentile([]uint64{7}, 95))
	// 1..100 shuffled: p95 is the 95th smallest, p100 the largest.
	xs := make([]uint64, 100)
	for i := range xs {
		xs[i] = uint64((i*37)%100 + 1)
	}
	require.Equal(t, uint64(95), percentile(xs, 95))
	require.Equal(t, uint64(50), percentile(xs, 50))
	require.Equal(t, uint64(100), percentile(xs, 100))
	require.Equal(t, uint64(100), maxOf(xs))
	// Twenty samples, one outlier: p95 is the 19th smallest, not the outlier.
	ys := []uint64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 90}
	require.Equal(t, uint64(2), percentile(ys, 95))
	require.Equal(t, uint64(90), maxOf(ys))
	require.Equal(t, uint64(1), ys[0], "the input must not be sorted in place")
	require.Equal(t, uint64(90), ys[19])
}

// The final line's fields and order are fixed by issue 8.
var lineRE = regexp.MustCompile(`^catchup: n=\d+ heights_per_s=\d+\.\d txs_per_s=\d+\.\d rows_per_s=\d+\.\d lag_p95_blocks=\d+ lag_max_blocks=\d+ missing=\d+ duplicates=\d+ workflows=-?\d+ peak_rss_mb=\d+$`)

func TestResultLine(t *testing.T) {
	r := result{Heights: 3001, Seconds: 100, Txs: 60020, Rows: 3001 + 60020 + 120000,
		LagP95: 2, LagMax: 5, Workflows: 3020, PeakRSSMiB: 71.6}
	got := r.line()
	require.Equal(t, "catchup: n=3001 heights_per_s=30.0 txs_per_s=600.2 rows_per_s=1830.2 lag_p95_blocks=2 lag_max_blocks=5 missing=0 duplicates=0 workflows=3020 peak_rss_mb=72", got)
	require.Regexp(t, lineRE, got)
	require.Equal(t, 0, r.exitCode())

	require.Regexp(t, lineRE, result{Workflows: -1}.line(), "a zero duration must not print NaN or Inf")
	require.Equal(t, 1, result{Missing: 1}.exitCode())
	require.Equal(t, 1, result{Duplicates: 1}.exitCode())
	require.Equal(t, 2, result{TimedOut: true}.exitCode())
	require.Equal(t, 130, result{Interrupted: true, Missing: 1}.exitCode())
}
