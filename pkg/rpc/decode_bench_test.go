package rpc

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/simchain"
)

// decodeFull decodes a block and its eth_getBlockReceipts answer the way
// the client does (BlockByHeight, then Receipts).
func decodeFull(height uint64, block, receipts []byte) (*chaindata.BlockData, error) {
	return decodeFullIn(nil, height, block, receipts)
}

// decodeFullIn is decodeFull of results cut from a batch answer whose
// checking walk recorded known, as FetchBlocks decodes them.
func decodeFullIn(known *spans, height uint64, block, receipts []byte) (*chaindata.BlockData, error) {
	d := decoder{method: "eth_getBlockByNumber", endpoint: "bench", height: height, known: known}
	data, err := d.decodeBlock(block)
	if err != nil {
		return nil, err
	}
	d.method = "eth_getBlockReceipts"
	if err := d.decodeReceipts(data, receipts); err != nil {
		return nil, err
	}
	return data, nil
}

// BenchmarkDecodeBlock decodes a block with its receipts, as answered by a
// node, at the default simulated mix (20 transactions, 2 logs each) and a
// heavy mainnet-like mix (150 transactions, 4 logs each). MB/s counts the
// block and receipts JSON.
func BenchmarkDecodeBlock(b *testing.B) { benchmarkDecode(b, decodeFull) }

// BenchmarkDecodeBlockEncodingJSON is the same on the encoding/json based
// decoder that decode.go replaced (decode_old_test.go): the before figure.
func BenchmarkDecodeBlockEncodingJSON(b *testing.B) { benchmarkDecode(b, oldDecodeFull) }

func benchmarkDecode(b *testing.B, decodeFull func(height uint64, block, receipts []byte) (*chaindata.BlockData, error)) {
	for _, size := range []struct{ txs, logs int }{{20, 2}, {150, 4}} {
		b.Run(fmt.Sprintf("txs=%d,logs=%d", size.txs, size.logs), func(b *testing.B) {
			const height = 1_000_000
			block, receipts := genBlock(height, 1, genOptions{Txs: size.txs, LogsPerTx: size.logs})
			b.SetBytes(int64(len(block) + len(receipts)))
			b.ReportAllocs()
			cpu := cpuTime()
			for b.Loop() {
				data, err := decodeFull(height, block, receipts)
				if err != nil {
					b.Fatal(err)
				}
				if len(data.Logs) != size.txs*size.logs {
					b.Fatalf("%d logs", len(data.Logs))
				}
			}
			reportCPU(b, cpu)
			b.ReportMetric(float64(len(block)+len(receipts))/1024, "KB/block")
		})
	}
}

// cpuTime is the process's CPU time (user and system, every thread: the
// garbage collector's work counts). On a machine shared with other jobs,
// wall-clock ns/op swings with their load; CPU time per operation is what
// the code costs.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the CPU time per operation since start as cpu-ns/op.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}

// BenchmarkDecodeBatch is the worker's read of one request at the default
// mix: answers of the simulated chain (pkg/simchain, 20 transactions and
// 2 logs a block, as `make bench-catchup` reads) for 50 heights' blocks
// and receipts each, fetched once, then checked and split (splitBatch) and
// decoded, block and receipts, as FetchBlocks does. ns/op is per answer
// of 50 heights; the answers cover 1,000 heights in turn, so that values
// repeat across blocks as much as in a catch-up, not more. traces=debug
// adds each height's debug_traceBlockByNumber callTracer answer to the
// request and decodes it too, as a traced catch-up does.
func BenchmarkDecodeBatch(b *testing.B) {
	b.Run("traces=none", func(b *testing.B) { benchmarkDecodeBatch(b, false) })
	b.Run("traces=debug", func(b *testing.B) { benchmarkDecodeBatch(b, true) })
}

func benchmarkDecodeBatch(b *testing.B, traced bool) {
	cfg := simchain.DefaultConfig()
	cfg.Length = 2000
	sim, err := simchain.Start(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer sim.Close()
	const per, first, heights = 50, 1000, 1000
	calls := 2 // the calls per height
	if traced {
		calls = 3
	}
	var answers [][]byte
	var size int
	for h := first; h < first+heights; h += per {
		var req strings.Builder
		req.WriteByte('[')
		for k := range per {
			if k > 0 {
				req.WriteByte(',')
			}
			fmt.Fprintf(&req, `{"jsonrpc":"2.0","id":%d,"method":"eth_getBlockByNumber","params":["0x%x",true]},`, calls*k, h+k)
			fmt.Fprintf(&req, `{"jsonrpc":"2.0","id":%d,"method":"eth_getBlockReceipts","params":["0x%x"]}`, calls*k+1, h+k)
			if traced {
				fmt.Fprintf(&req, `,{"jsonrpc":"2.0","id":%d,"method":"debug_traceBlockByNumber","params":["0x%x",{"tracer":"callTracer"}]}`, calls*k+2, h+k)
			}
		}
		req.WriteByte(']')
		resp, err := http.Post(sim.HTTPURL(), "application/json", strings.NewReader(req.String()))
		if err != nil {
			b.Fatal(err)
		}
		answer, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			b.Fatal(err)
		}
		answers = append(answers, answer)
		size += len(answer)
	}
	b.SetBytes(int64(size / len(answers)))
	b.ReportAllocs()
	cpu := cpuTime()
	n, frames := 0, 0
	for b.Loop() {
		answer := answers[n%len(answers)]
		start := uint64(first + per*(n%len(answers)))
		n++
		results, errs, known, err := splitBatch(answer, calls*per)
		if err != nil {
			b.Fatal(err)
		}
		for k := range per {
			for c := range calls {
				if errs[calls*k+c] != nil {
					b.Fatal(errs[calls*k+c])
				}
			}
			data, err := decodeFullIn(known, start+uint64(k), results[calls*k], results[calls*k+1])
			if err != nil {
				b.Fatal(err)
			}
			if !traced {
				continue
			}
			d := decoder{method: "debug_traceBlockByNumber", endpoint: "bench", height: start + uint64(k), known: known}
			traces, failed, _, err := d.decodeCallTraces(data, results[calls*k+2])
			if err != nil || failed != "" {
				b.Fatal(err, failed)
			}
			frames += len(traces)
		}
	}
	reportCPU(b, cpu)
	if traced {
		b.ReportMetric(float64(frames)/float64(n*per), "frames/height")
	}
}
