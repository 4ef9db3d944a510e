// Command benchapi measures the query API under load (`make bench-api`):
// it indexes a simulated chain of N heights with the worker on the real
// local stack, then sends each route a bounded number of requests on
// loopback and prints per route requests/s and p50/p99/max latency, ending
// with one `api: route=…` line per route. This file is its flags; the run
// is package apibench and the requests package load (their README.md has
// every output field). Exit code 0 when every answer was a 200.
package main

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"time"

	"github.com/tideline-dev/tideline/test/benchapi/apibench"
	"github.com/tideline-dev/tideline/test/internal/benchkit"
)

func main() {
	var o apibench.Options
	flag.Uint64Var(&o.N, "n", 100_000, "heights of the simulated chain to index (0..n)")
	flag.IntVar(&o.Requests, "requests", 2000, "requests per route")
	flag.IntVar(&o.Concurrency, "concurrency", 8, "requests in flight at once")
	flag.IntVar(&o.Samples, "samples", 500, "inputs drawn from the index per kind (heights, hashes, addresses)")
	flag.DurationVar(&o.Timeout, "timeout", 60*time.Minute, "give up indexing after this long")
	flag.StringVar(&o.Dir, "dir", "", "the run's folder, kept and reused (default: a new temporary one, removed)")
	flag.Uint64Var(&o.Seed, "seed", 1, "seed of the simulated chain and of the inputs")
	flag.StringVar(&o.Traces, "traces", "", "index the call traces with this tracer (debug or parity) and load the trace routes too")
	flag.StringVar(&o.CPUProfile, "cpuprofile", "", "write the process's CPU profile of the load (the API, the worker and the client; not the indexing) to this file")
	flag.BoolVar(&o.Warm, "warm", false, "read the index's files once before the load, so the page cache holds them (for an index smaller than the memory)")
	flag.IntVar(&o.Warmup, "warmup", 0, "requests sent to each route first, numbered after the measured ones, neither timed nor counted (a freshly started server's caches)")
	routes := flag.String("routes", "", "load only the routes whose name matches this regular expression (default: all)")
	flag.Parse()
	if *routes != "" {
		re, err := regexp.Compile(*routes)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench-api: -routes:", err)
			os.Exit(64)
		}
		o.Routes = re
	}
	if o.Traces != "" && o.Traces != "debug" && o.Traces != "parity" {
		fmt.Fprintln(os.Stderr, "bench-api: -traces is debug or parity")
		os.Exit(64)
	}
	if o.N == 0 || o.Requests < 1 || o.Concurrency < 1 || o.Samples < 1 || o.Warmup < 0 {
		fmt.Fprintln(os.Stderr, "bench-api: -n, -requests, -concurrency and -samples must be positive, -warmup not negative")
		os.Exit(64)
	}
	benchkit.Exit(apibench.Run, o)
}
