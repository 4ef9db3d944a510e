package storage

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/chaindata"
)

// BenchmarkTraceLayouts measures what the server spends on the frames of
// a traced catch-up in two layouts of the traces table, to tell what
// storing the frames of a transaction in one row would save (issue 31):
//
//   - rows: the traces table as it is (0058), a row a frame;
//   - per-tx: an experimental table of the same columns as arrays, a row
//     a transaction, the same engine, partitioning and version.
//
// Each writes 40 chunks of 500 heights of 89 frames (20 transactions, 4
// or 5 frames each, 68 bytes of input and 32 of output a frame), one
// insert a chunk as a range writes them, then merges the table into one
// part (the merges the inserts started, then OPTIMIZE FINAL). It reports the server's CPU (utime and stime of
// /proc/<pid>/stat, cpuMillis) per height for the inserts and for the merge, and the
// bytes on disk per height. The server must be a process (ClickHouse
// 18.16, not the modern lanes' in-process engine).
func BenchmarkTraceLayouts(b *testing.B) {
	if testCH.Process == nil {
		b.Fatal("the server's CPU is read from its process: run on a ClickHouse server")
	}
	const chunks, heights = 40, 500
	server := strconv.Itoa(testCH.Process.Pid())
	serverCPU := func() float64 { return cpuMillis(b, server) / 1000 } // seconds
	for _, layout := range []string{"rows", "per-tx"} {
		b.Run(layout, func(b *testing.B) {
			for b.Loop() {
				c := benchOpen(b)
				ctx := context.Background()
				table := tableTraces
				if layout == "per-tx" {
					table = "traces_per_tx"
					require.NoError(b, c.execSQL(ctx, perTxTracesDDL))
				}
				insertCPU := 0.0
				for k := range chunks {
					frames := layoutFrames(uint64(k*heights), heights)
					before := serverCPU()
					if layout == "rows" {
						var rows traceRows
						for i := range frames {
							require.NoError(b, rows.add("c", &frames[i], 1, canonical))
						}
						require.NoError(b, c.insertColumns(ctx, insertStmt{tableTraces, traceColumns}, rows.len(), rows.columns()))
					} else {
						cols := perTxColumns(b, frames)
						batch, err := c.prepareInsert(ctx, insertStmt{table, perTxTraceColumns})
						require.NoError(b, err)
						for i, col := range cols {
							require.NoError(b, batch.Column(i).Append(col), perTxTraceColumns[i])
						}
						require.NoError(b, send(ctx, batch))
					}
					insertCPU += serverCPU() - before
				}
				// The merges the inserts started, then one into a single
				// part: OPTIMIZE does nothing while parts are merging.
				before := serverCPU()
				for deadline := time.Now().Add(5 * time.Minute); ; {
					var merging uint64
					require.NoError(b, c.conn.QueryRow(ctx, "SELECT count() FROM system.merges WHERE database = currentDatabase()").Scan(&merging))
					if merging == 0 {
						break
					}
					require.True(b, time.Now().Before(deadline), "merges still running after 5 minutes")
					time.Sleep(100 * time.Millisecond) // polling the server's state
				}
				require.NoError(b, c.execSQL(ctx, "OPTIMIZE TABLE "+table+" FINAL"))
				mergeCPU := serverCPU() - before
				var parts, bytes uint64
				require.NoError(b, c.conn.QueryRow(ctx, "SELECT count(), sum(bytes_on_disk) FROM system.parts WHERE database = currentDatabase() AND table = ? AND active",
					table).Scan(&parts, &bytes))
				require.Equal(b, uint64(1), parts, "%s merged into one part", table)
				n := float64(chunks * heights)
				b.ReportMetric(insertCPU*1000/n, "insert-server-ms/height")
				b.ReportMetric(mergeCPU*1000/n, "merge-server-ms/height")
				b.ReportMetric((insertCPU+mergeCPU)*1000/n, "server-ms/height")
				b.ReportMetric(float64(bytes)/n, "bytes/height")
			}
		})
	}
}

// perTxTracesDDL is the experiment's table: traces' columns, each an array
// of the transaction's frames in trace_index order.
const perTxTracesDDL = `CREATE TABLE traces_per_tx
(
    chain_id      String,
    block_number  UInt64,
    block_hash    String,
    tx_index      UInt32,
    tx_hash       String,
    trace_address Array(Array(UInt32)),
    type          Array(String),
    from_address  Array(String),
    to_address    Array(String),
    value         Array(String),
    gas           Array(UInt64),
    gas_used      Array(UInt64),
    input         Array(String),
    output        Array(String),
    error         Array(String),
    revert_reason Array(String),
    reverted      Array(UInt8),
    subtraces     Array(UInt32),
    version       UInt64,
    is_canonical  UInt8 DEFAULT 1
)
ENGINE = ReplacingMergeTree(version)
PARTITION BY intDiv(block_number, 1000000)
ORDER BY (chain_id, block_number, tx_index)
SETTINGS index_granularity = 1024`

var perTxTraceColumns = []string{"chain_id", "block_number", "block_hash", "tx_index", "tx_hash", "trace_address", "type",
	"from_address", "to_address", "value", "gas", "gas_used", "input", "output", "error", "revert_reason", "reverted",
	"subtraces", "version", "is_canonical"}

// perTxColumns groups frames (in transaction order) into one row a
// transaction.
func perTxColumns(b *testing.B, frames []chaindata.Trace) []any {
	var (
		chain, blockHash, txHash                             []string
		blockNumber, version                                 []uint64
		txIndex                                              []uint32
		canon                                                []uint8
		addr                                                 [][][]uint32
		typ, from, to, value, input, output, errText, reason [][]string
		gas, gasUsed                                         [][]uint64
		reverted                                             [][]uint8
		subtraces                                            [][]uint32
		rows                                                 traceRows // for its input and output bytes
	)
	for i := range frames {
		t := &frames[i]
		in, err := rows.frameBytes(t, "input", t.Input)
		require.NoError(b, err)
		out, err := rows.frameBytes(t, "output", t.Output)
		require.NoError(b, err)
		if t.Index == 0 {
			chain, blockHash, txHash = append(chain, "c"), append(blockHash, t.BlockHash), append(txHash, t.TxHash)
			blockNumber, version, txIndex, canon = append(blockNumber, t.BlockNumber), append(version, 1), append(txIndex, t.TxIndex), append(canon, canonical)
			addr, typ, from, to, value = append(addr, nil), append(typ, nil), append(from, nil), append(to, nil), append(value, nil)
			input, output, errText, reason = append(input, nil), append(output, nil), append(errText, nil), append(reason, nil)
			gas, gasUsed, reverted, subtraces = append(gas, nil), append(gasUsed, nil), append(reverted, nil), append(subtraces, nil)
		}
		k := len(chain) - 1
		a := t.Address
		if a == nil {
			a = []uint32{}
		}
		addr[k], typ[k], from[k], to[k] = append(addr[k], a), append(typ[k], string(t.Type)), append(from[k], t.From), append(to[k], t.To)
		value[k], input[k], output[k] = append(value[k], t.Value), append(input[k], in), append(output[k], out)
		errText[k], reason[k] = append(errText[k], t.Error), append(reason[k], t.RevertReason)
		gas[k], gasUsed[k] = append(gas[k], t.Gas), append(gasUsed[k], t.GasUsed)
		reverted[k], subtraces[k] = append(reverted[k], flag(t.Reverted)), append(subtraces[k], t.Subtraces)
	}
	return []any{chain, blockNumber, blockHash, txIndex, txHash, addr, typ, from, to, value, gas, gasUsed,
		input, output, errText, reason, reverted, subtraces, version, canon}
}

// layoutFrames returns the frames of heights [from, from+n): 20
// transactions a height, 11 of 4 frames and 9 of 5 (89 a height), a
// top-level call and inner calls one or two deep. Their values are as
// hard to compress as the simulated chain's: random hashes, addresses
// drawn (skewed) from 20,000, inputs of a selector from 50 and two ABI
// words (an address, a small amount), outputs of one word.
func layoutFrames(from uint64, n int) []chaindata.Trace {
	rng := rand.New(rand.NewPCG(from, 89))
	random := func(size int) []byte {
		b := make([]byte, size)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	hexOf := func(b []byte) string { return "0x" + hex.EncodeToString(b) }
	pool := layoutAddresses()
	address := func() string { return pool[rng.IntN(rng.IntN(len(pool))+1)] }
	word := func(tail []byte) []byte { return append(make([]byte, 32-len(tail)), tail...) }
	out := make([]chaindata.Trace, 0, n*89)
	for h := from; h < from+uint64(n); h++ {
		blockHash := hexOf(random(32))
		for tx := range uint32(20) {
			frames := uint32(4)
			if tx >= 11 {
				frames = 5
			}
			txHash := hexOf(random(32))
			for i := range frames {
				to := address()
				input := binary.BigEndian.AppendUint32(nil, uint32(rng.IntN(50))*0x01010101)
				callee, err := hex.DecodeString(to[2:])
				if err != nil {
					panic(err)
				}
				input = append(input, word(callee)...) // an address word: 12 zero bytes, then 20
				input = append(input, word(random(8))...)
				t := chaindata.Trace{BlockNumber: h, BlockHash: blockHash, TxIndex: tx, TxHash: txHash, Index: i,
					Type: chaindata.TraceCall, From: address(), To: to, Value: "0", Gas: 30_000 + rng.Uint64N(200_000),
					GasUsed: 21_000 + rng.Uint64N(9_000), Input: hexOf(input), Output: hexOf(word(random(8)))}
				if rng.IntN(4) == 0 {
					t.Value = strconv.FormatUint(rng.Uint64(), 10)
				}
				// Depth first: [], [0], [0 0], ([0 1],) [1].
				switch {
				case i == 0:
					t.Subtraces = 2
				case i == 1:
					t.Address, t.Subtraces = []uint32{0}, frames-3
				case i == 2:
					t.Address, t.Type = []uint32{0, 0}, chaindata.TraceStaticCall
				case i == frames-1:
					t.Address = []uint32{1}
				default:
					t.Address, t.Type = []uint32{0, 1}, chaindata.TraceDelegateCall
				}
				out = append(out, t)
			}
		}
	}
	return out
}

// layoutAddresses are the frames' 20,000 addresses.
func layoutAddresses() []string {
	rng := rand.New(rand.NewPCG(20_000, 1))
	pool := make([]string, 20_000)
	for i := range pool {
		b := make([]byte, 20)
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		pool[i] = "0x" + hex.EncodeToString(b)
	}
	return pool
}
