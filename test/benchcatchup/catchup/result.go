package catchup

import (
	"fmt"
	"math"
	"sort"
)

// percentile is the nearest-rank percentile p (0 < p ≤ 100) of xs: the
// smallest sample with at least p% of the samples at or below it. It is a
// sample that occurred, never an interpolation, which is what "p95 lag in
// blocks" means to a reader. xs is not modified; no samples give 0.
func percentile(xs []uint64, p float64) uint64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]uint64(nil), xs...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	rank = max(1, min(rank, len(s)))
	return s[rank-1]
}

// maxOf is the largest sample, 0 for none.
func maxOf(xs []uint64) uint64 {
	var m uint64
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

// result is what the final line reports.
type result struct {
	Heights    uint64  // heights [0, head at the end]
	Seconds    float64 // worker start to the watermark reaching the head
	Txs, Rows  uint64  // expected transactions; blocks+transactions+logs rows stored
	LagP95     uint64
	LagMax     uint64
	Missing    uint64
	Duplicates uint64
	Workflows  int64 // -1 when the visibility API did not answer
	PeakRSSMiB float64
	// CPU is the CPU seconds of each process ("clickhouse", "worker",
	// "temporal") from its start to the worker's stop.
	CPU map[string]float64
	// Disk, in GB; -1 when it could not be measured.
	DiskPeakGB, DiskEndGB, LiveGB float64
	// MergeAmplification is bytes merged / bytes inserted over the
	// bench's database; -1 when unknown.
	MergeAmplification float64
	// Frames is the call frames stored (0: the run traced nothing), and
	// TraceBytes the trace tables' active parts on disk (-1: not read).
	Frames      uint64
	TraceBytes  float64
	TimedOut    bool
	Interrupted bool
}

// cpuMsPerHeight is a process's CPU milliseconds per height of the
// catch-up; -1 when its CPU time was not read or no height was indexed.
func (r result) cpuMsPerHeight(name string) float64 {
	s, ok := r.CPU[name]
	if !ok || r.Heights == 0 {
		return -1
	}
	return s * 1000 / float64(r.Heights)
}

func rate(n uint64, seconds float64) float64 {
	if seconds <= 0 {
		return 0
	}
	return float64(n) / seconds
}

// line is the one machine-readable line the benchmark ends with. Its
// fields and their order are fixed (issue 8; issue 21 appended the CPU per
// height and the disk fields, issue 31 the trace tables' bytes); tools
// parse it. New fields go at the end.
func (r result) line() string {
	return fmt.Sprintf("catchup: n=%d heights_per_s=%.1f txs_per_s=%.1f rows_per_s=%.1f lag_p95_blocks=%d lag_max_blocks=%d missing=%d duplicates=%d workflows=%d peak_rss_mb=%.0f"+
		" ch_ms=%.2f worker_ms=%.2f temporal_ms=%.2f disk_peak_gb=%.3f disk_end_gb=%.3f live_gb=%.3f merge_amplification=%.2f"+
		" trace_bytes_per_height=%.0f trace_bytes_per_frame=%.1f",
		r.Heights, rate(r.Heights, r.Seconds), rate(r.Txs, r.Seconds), rate(r.Rows, r.Seconds),
		r.LagP95, r.LagMax, r.Missing, r.Duplicates, r.Workflows, r.PeakRSSMiB,
		r.cpuMsPerHeight("clickhouse"), r.cpuMsPerHeight("worker"), r.cpuMsPerHeight("temporal"),
		r.DiskPeakGB, r.DiskEndGB, r.LiveGB, r.MergeAmplification,
		r.traceBytesPer(r.Heights), r.traceBytesPer(r.Frames))
}

// traceBytesPer is the trace tables' bytes on disk per height or per
// frame; -1 when the run stored no frames or they were not measured.
func (r result) traceBytesPer(n uint64) float64 {
	if r.Frames == 0 || n == 0 || r.TraceBytes < 0 {
		return -1
	}
	return r.TraceBytes / float64(n)
}

// exitCode: 0 only for a complete, exact catch-up within the timeout.
func (r result) exitCode() int {
	switch {
	case r.Interrupted:
		return 130
	case r.TimedOut:
		return 2
	case r.Missing > 0 || r.Duplicates > 0:
		return 1
	}
	return 0
}
