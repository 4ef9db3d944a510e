package simchain

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// Run on one core, as the issue asks the chain to be measured:
//
//	go test -run '^$' -bench . -cpu 1 ./pkg/simchain/
//
// blocks/s counts blocks served with their receipts; MB/s is the JSON.

// BenchmarkGenerate is the cost of one block with its receipts without
// HTTP: building the block and rendering eth_getBlockByNumber(full) and
// eth_getBlockReceipts.
func BenchmarkGenerate(b *testing.B) {
	for _, mix := range benchMixes {
		b.Run(mix.name, func(b *testing.B) {
			cfg := DefaultConfig()
			cfg.TxsPerBlock, cfg.LogsPerTx, cfg.Length = mix.txs, mix.logs, 1_000_000
			c := newChain(cfg)
			rd := renderer{v: c.view(), p: c.pools, chainID: cfg.ChainID}
			blk := new(block)
			var buf []byte
			total := 0
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				rd.v.build(blk, uint64(i%1_000_000))
				buf = rd.appendBlock(buf[:0], blk, true, false, false)
				buf = rd.appendReceipts(buf, blk, false)
				total += len(buf)
			}
			report(b, total)
		})
	}
}

// BenchmarkServeHTTPBatch serves blocks with receipts to a real HTTP client
// in batches of 50 heights (100 calls per request), as a range indexer
// asks; the client only reads the bytes, so nearly all the time is the
// chain's.
func BenchmarkServeHTTPBatch(b *testing.B) {
	const perBatch = 50
	for _, mix := range benchMixes {
		b.Run(mix.name, func(b *testing.B) {
			cfg := DefaultConfig()
			cfg.TxsPerBlock, cfg.LogsPerTx, cfg.Length = mix.txs, mix.logs, 1_000_000
			s := startSim(b, cfg)
			client := &http.Client{}
			batches := make([][]byte, 100)
			for i := range batches {
				batches[i] = blockAndReceiptsBatch(uint64(i*perBatch), perBatch)
			}
			total := 0
			blocks := 0
			readBuf := make([]byte, 1<<20) // few read calls: the client's cost is not the chain's
			for i := 0; b.Loop(); i++ {
				resp, err := client.Post(s.HTTPURL(), "application/json", bytes.NewReader(batches[i%len(batches)]))
				if err != nil {
					b.Fatal(err)
				}
				n, err := io.CopyBuffer(struct{ io.Writer }{io.Discard}, resp.Body, readBuf)
				resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusOK {
					b.Fatalf("HTTP %d: %v", resp.StatusCode, err)
				}
				total += int(n)
				blocks += perBatch
			}
			b.ReportMetric(float64(blocks)/b.Elapsed().Seconds(), "blocks/s")
			b.ReportMetric(float64(total)/1e6/b.Elapsed().Seconds(), "MB/s")
			b.ReportMetric(float64(total)/float64(blocks), "bytes/block")
		})
	}
}

// BenchmarkServeHTTPSingle asks block and receipts one call per request,
// as tideline's client does today for a single height: the per-request
// overhead on top of BenchmarkGenerate.
func BenchmarkServeHTTPSingle(b *testing.B) {
	cfg := DefaultConfig()
	cfg.Length = 1_000_000
	s := startSim(b, cfg)
	client := &http.Client{}
	readBuf := make([]byte, 1<<20)
	total := 0
	for i := 0; b.Loop(); i++ {
		for _, body := range []string{
			fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["0x%x",true]}`, i),
			fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"eth_getBlockReceipts","params":["0x%x"]}`, i),
		} {
			resp, err := client.Post(s.HTTPURL(), "application/json", strings.NewReader(body))
			if err != nil {
				b.Fatal(err)
			}
			n, err := io.CopyBuffer(struct{ io.Writer }{io.Discard}, resp.Body, readBuf)
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK {
				b.Fatalf("HTTP %d: %v", resp.StatusCode, err)
			}
			total += int(n)
		}
	}
	report(b, total)
}

var benchMixes = []struct {
	name string
	txs  int
	logs float64
}{{"default_20tx_2logs", 20, 2}, {"mainnet_150tx_4logs", 150, 4}}

func report(b *testing.B, total int) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "blocks/s")
	b.ReportMetric(float64(total)/1e6/b.Elapsed().Seconds(), "MB/s")
	b.ReportMetric(float64(total)/float64(b.N), "bytes/block")
}

// BenchmarkExpected is what checking one stored height against the chain
// costs (hashes and counts, no block built): a 700,000-height run's check
// takes 700,000 of these.
func BenchmarkExpected(b *testing.B) {
	cfg := DefaultConfig()
	cfg.Length = 1_000_000
	c := newChain(cfg)
	v := c.view()
	for i := 0; b.Loop(); i++ {
		_ = v.expected(uint64(i % 1_000_000))
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "heights/s")
}
