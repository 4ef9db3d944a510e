package rpc_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/tideline-dev/tideline/pkg/rpc"
)

// singleOnly hides a client's batch method, so that rpc.FetchBlocks reads
// height by height (two requests each), a few at a time.
type singleOnly struct{ rpc.Client }

// BenchmarkFetchBlocks reads 20-transaction blocks (2 logs each, ~60 KB
// with receipts) through the real client from a local JSON-RPC server that
// answers from pre-rendered blocks, and reports blocks/s and CPU per block
// (client, server and garbage collector together: they share the process).
// "batch" is FetchBlocks (50 heights per request, 4 requests at once);
// "single" is FetchBlock per height, 8 heights at a time.
func BenchmarkFetchBlocks(b *testing.B) {
	node := newChainNode(b, 400, rpc.GenOptions{Txs: 20, LogsPerTx: 2})
	var heights []uint64
	for h := uint64(1); h <= 400; h++ {
		if h%10 != 0 { // the node's every tenth block is empty
			heights = append(heights, h)
		}
	}
	for _, mode := range []string{"batch", "single"} {
		b.Run(mode, func(b *testing.B) {
			cfg := batchConfig(node.srv.URL)
			c, err := rpc.NewEthereum(context.Background(), cfg, nil, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			var client rpc.Client = c
			if mode == "single" {
				client = singleOnly{c}
			}
			cpu := processCPU()
			start := time.Now()
			for b.Loop() {
				for _, r := range rpc.FetchBlocks(b.Context(), client, heights) {
					if r.Err != nil || len(r.Data.Logs) != 40 {
						b.Fatal(fmt.Sprint(r.Height, r.Err))
					}
				}
			}
			blocks := float64(b.N * len(heights))
			b.ReportMetric(blocks/time.Since(start).Seconds(), "blocks/s")
			b.ReportMetric(float64(processCPU()-cpu)/blocks, "cpu-ns/block")
		})
	}
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
