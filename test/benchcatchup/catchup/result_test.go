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
// Issue 21 appended the CPU per height and the disk fields, issue 31 the
// trace tables' bytes, -1 when not measured.
var lineRE = regexp.MustCompile(`^catchup: n=\d+ heights_per_s=\d+\.\d txs_per_s=\d+\.\d rows_per_s=\d+\.\d lag_p95_blocks=\d+ lag_max_blocks=\d+ missing=\d+ duplicates=\d+ workflows=-?\d+ peak_rss_mb=\d+` +
	` ch_ms=-?\d+\.\d\d worker_ms=-?\d+\.\d\d temporal_ms=-?\d+\.\d\d disk_peak_gb=-?\d+\.\d{3} disk_end_gb=-?\d+\.\d{3} live_gb=-?\d+\.\d{3} merge_amplification=-?\d+\.\d\d` +
	` trace_bytes_per_height=-?\d+ trace_bytes_per_frame=-?\d+\.\d$`)

func TestResultLine(t *testing.T) {
	r := result{Heights: 3001, Seconds: 100, Txs: 60020, Rows: 3001 + 60020 + 120000,
		LagP95: 2, LagMax: 5, Workflows: 3020, PeakRSSMiB: 71.6,
		CPU:        map[string]float64{"clickhouse": 3.5412, "worker": 3.4811, "temporal": 0.4802},
		DiskPeakGB: 1.23456, DiskEndGB: 0.9876, LiveGB: 0.4321, MergeAmplification: 3.456,
		Frames: 267089, TraceBytes: 81234567}
	got := r.line()
	require.Equal(t, "catchup: n=3001 heights_per_s=30.0 txs_per_s=600.2 rows_per_s=1830.2 lag_p95_blocks=2 lag_max_blocks=5 missing=0 duplicates=0 workflows=3020 peak_rss_mb=72"+
		" ch_ms=1.18 worker_ms=1.16 temporal_ms=0.16 disk_peak_gb=1.235 disk_end_gb=0.988 live_gb=0.432 merge_amplification=3.46"+
		" trace_bytes_per_height=27069 trace_bytes_per_frame=304.1", got)
	require.Regexp(t, lineRE, got)
	require.Equal(t, 0, r.exitCode())

	require.Regexp(t, lineRE, result{Workflows: -1}.line(), "a zero duration must not print NaN or Inf")
	// A process whose CPU was not read, or no height: -1, not 0 or Inf.
	partial := result{Heights: 10, CPU: map[string]float64{"worker": 0.02}, DiskPeakGB: -1, DiskEndGB: -1, LiveGB: -1, MergeAmplification: -1}
	require.Regexp(t, lineRE, partial.line())
	require.Contains(t, partial.line(), " ch_ms=-1.00 worker_ms=2.00 temporal_ms=-1.00 disk_peak_gb=-1.000 disk_end_gb=-1.000 live_gb=-1.000 merge_amplification=-1.00"+
		" trace_bytes_per_height=-1 trace_bytes_per_frame=-1.0")
	// Frames stored but the tables not read: -1 too.
	require.Contains(t, result{Heights: 10, Frames: 5, TraceBytes: -1}.line(), " trace_bytes_per_height=-1 trace_bytes_per_frame=-1.0")
	require.Equal(t, -1.0, result{CPU: map[string]float64{"worker": 1}}.cpuMsPerHeight("worker"))
	require.Equal(t, 1, result{Missing: 1}.exitCode())
	require.Equal(t, 1, result{Duplicates: 1}.exitCode())
	require.Equal(t, 2, result{TimedOut: true}.exitCode())
	require.Equal(t, 130, result{Interrupted: true, Missing: 1}.exitCode())
}
