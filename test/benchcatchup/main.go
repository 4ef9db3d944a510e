// Command benchcatchup measures a catch-up end to end on the real local
// stack (`make bench-catchup`, issue 8). This file is its flags; the run is
// package catchup (see its README.md for the phases and every field of the
// final `catchup:` line), the worker's generated config package
// workerconfig, and the check of the database against the chain package
// verify.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/tideline-dev/tideline/pkg/storage"
	"github.com/tideline-dev/tideline/test/benchcatchup/catchup"
	"github.com/tideline-dev/tideline/test/internal/benchkit"
)

func main() {
	var o catchup.Options
	flag.Uint64Var(&o.N, "n", 50000, "backlog: the chain starts this many heights above genesis (heights 0..n exist)")
	flag.IntVar(&o.Txs, "txs", 20, "transactions per block")
	flag.Float64Var(&o.Logs, "logs", 2, "logs per transaction, on average")
	flag.DurationVar(&o.BlockTime, "block-time", 2*time.Second, "block time of the simulated chain (and the chain's block_time)")
	flag.IntVar(&o.RangeSize, "range", -1, "scheduler.range_size (heights per IndexRange; 0 = one workflow per height); unset: the key is left out")
	flag.BoolVar(&o.Push, "push", false, "the push source on websocket newHeads (instead of -poll)")
	flag.BoolVar(&o.Poll, "poll", true, "the push source on polls of the http endpoint's head (push.poll_interval), as recommended for live indexing; -poll=false: HeadScan alone (pull)")
	flag.Float64Var(&o.CallsPerTx, "calls-per-tx", 3, "inner call frames per contract transaction of the simulated chain's traces, on average")
	flag.DurationVar(&o.TraceLatency, "trace-latency", 0, "time the simulated chain takes per trace call (tracing costs a node time per block)")
	flag.DurationVar(&o.OldPartsLifetime, "old-parts-lifetime", storage.RecommendedOldPartsLifetime, "the ClickHouse server's old_parts_lifetime (how long a part a merge replaced stays on disk; whole seconds); 0: the server's default, 8m")
	flag.Var(&o.Sets, "set", "extra config `key=value`, relative to the chain unless it starts with log., metrics., temporal., clickhouse. or chains. (repeatable)")
	flag.DurationVar(&o.Timeout, "timeout", 60*time.Minute, "give up when the watermark has not reached the head after this long")
	flag.Uint64Var(&o.Seed, "seed", 1, "seed of the simulated chain")
	flag.StringVar(&o.LogLevel, "log-level", "info", "the worker's log.level (its log goes to worker.log in the run's folder)")
	flag.BoolVar(&o.Keep, "keep", false, "keep the run's folder (logs, data) even when the run passes")
	flag.StringVar(&o.CPUProfile, "cpuprofile", "", "write a CPU profile of the worker (from its /debug/pprof/profile, if served) to this file")
	flag.IntVar(&o.CPUSeconds, "cpuprofile-seconds", 30, "length of the CPU profile, taken from the first indexed height on")
	flag.Parse()
	if o.Push {
		o.Poll = false // one push endpoint: the websocket replaces the polls
	}
	if o.N == 0 || o.Txs < 0 || o.Logs < 0 || o.CallsPerTx < 0 || o.TraceLatency < 0 || o.OldPartsLifetime < 0 || o.BlockTime <= 0 || o.Timeout <= 0 || o.CPUSeconds <= 0 {
		fmt.Fprintln(os.Stderr, "bench-catchup: -n, -block-time, -timeout and -cpuprofile-seconds must be positive; -txs, -logs, -calls-per-tx, -trace-latency and -old-parts-lifetime not negative")
		os.Exit(64)
	}
	benchkit.Exit(catchup.Run, o)
}
