// Package benchkit holds what the two end-to-end benchmarks
// (test/benchcatchup, test/benchapi) both need: the local stack they run on
// (a fresh Temporal dev server and ClickHouse, the simulated chain, a
// Temporal client and a ClickHouse connection), the list of what to stop
// when a run ends, the timestamped progress lines they print, and the CPU
// time and peak memory of a process read from /proc.
//
// It measures nothing by itself: each benchmark decides what to time and
// which line to print.
package benchkit
