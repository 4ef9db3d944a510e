package storage

import (
	"encoding/hex"
	"errors"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/chaindata"
)

// A database whose traces hold input and output as hex text (before 0058)
// keeps every frame through the rebuild (0058-0061): the same frames are
// read afterwards, their bytes stored, a tombstone's empty text kept.
func TestTracesRebuildTurnsHexIntoBytes(t *testing.T) {
	ctx := testContext(t)
	c, ms, i := migratedUpTo(t, "0058_create_traces_bytes.sql")

	// The rows as the binary before 0058 wrote them: the same columns,
	// input and output as text; and a newer tombstone at one more position.
	d := tracedBlock(40, 2, 0)
	d.Traces[1].Output = "0x00ff10"
	var rows traceRows
	for j := range d.Traces {
		require.NoError(t, rows.add("c", &d.Traces[j], 5, canonical))
	}
	gone := chaindata.Trace{BlockNumber: 40, BlockHash: d.Block.Hash, TxIndex: 1, Index: 4, Input: "0x01", Output: "0x02"}
	require.NoError(t, rows.add("c", &gone, 5, canonical))
	require.NoError(t, rows.add("c", &chaindata.Trace{BlockNumber: 40, BlockHash: d.Block.Hash, TxIndex: 1, Index: 4}, 6, tombstone))
	cols := rows.columns()
	in, out := slices.Index(traceColumns, "input"), slices.Index(traceColumns, "output")
	cols[in], cols[out] = []string{}, []string{}
	for _, f := range append(slices.Clone(d.Traces), gone, chaindata.Trace{}) {
		cols[in] = append(cols[in].([]string), f.Input)
		cols[out] = append(cols[out].([]string), f.Output)
	}
	require.NoError(t, c.insertColumns(ctx, insertStmt{tableTraces, traceColumns}, rows.len(), cols))

	applied, err := c.migrate(ctx, ms)
	require.NoError(t, err)
	require.Equal(t, []string{ms[i].Name, ms[i+1].Name, ms[i+2].Name, ms[i+3].Name}, applied[:4])
	exists, err := c.tablesExist(ctx, []string{"traces_hex", "traces_bytes", tableTraces})
	require.NoError(t, err)
	require.Equal(t, map[string]bool{tableTraces: true}, exists, "the rebuilt table under the name, the others gone")

	got, err := c.Reader().Traces().BlockTraces(ctx, "c", 40)
	require.NoError(t, err)
	require.Equal(t, d.Traces, got, "every frame as it was, the tombstoned one left out")
	var raw string
	var n uint64
	require.NoError(t, c.conn.QueryRow(ctx, "SELECT lower(hex(output)) FROM traces WHERE block_number = 40 AND tx_index = 0 AND trace_index = 1").Scan(&raw))
	require.Equal(t, "00ff10", raw, "stored as bytes")
	require.NoError(t, c.conn.QueryRow(ctx, "SELECT count() FROM traces WHERE is_canonical = 0 AND input = '' AND output = ''").Scan(&n))
	require.Equal(t, uint64(1), n, "the tombstone kept")
}

// A frame whose input or output is not 0x hex is refused with an error
// naming it, and nothing of the write is stored.
func TestFrameWithoutHexIsRefused(t *testing.T) {
	c := openTest(t)
	ctx := testContext(t)
	for _, bad := range []struct{ field, input, output string }{
		{"input", "0xzz", "0x"},
		{"output", "0x", "6080"},
		{"output", "0x", "0x123"},
	} {
		d := tracedBlock(50, 2, 0)
		d.Traces[5].Input, d.Traces[5].Output = bad.input, bad.output
		err := c.WriteBlocks(ctx, "c", []*chaindata.BlockData{tracedBlock(49, 1, 0), d})
		var fe *FrameBytesError
		require.True(t, errors.As(err, &fe), "%v", err)
		require.Equal(t, FrameBytesError{Height: 50, Tx: 1, Index: 1, Field: bad.field}, FrameBytesError{Height: fe.Height, Tx: fe.Tx, Index: fe.Index, Field: fe.Field})
		traced, err := c.Reader().Traces().TracedHeights(ctx, "c", []uint64{49, 50})
		require.NoError(t, err)
		require.Empty(t, traced, "no height of the write is marked")
		require.Empty(t, framesOf(t, c, 49, 1))
	}
}

// framesWithBytes returns n frames whose input and output differ from
// frame to frame, size bytes of input each.
func framesWithBytes(n, size int) []chaindata.Trace {
	frames := make([]chaindata.Trace, n)
	for i := range frames {
		in := make([]byte, size)
		for j := range in {
			in[j] = byte(i*7 + j)
		}
		frames[i] = chaindata.Trace{BlockNumber: uint64(i / 100), TxIndex: uint32(i % 100), Type: chaindata.TraceCall,
			Input: "0x" + hex.EncodeToString(in), Output: "0x" + hex.EncodeToString(in[:size/3])}
	}
	return frames
}

// The input and output columns hold each frame's own bytes when a write's
// bytes fill more than one chunk of the rows' buffer.
func TestFrameBytesAcrossChunks(t *testing.T) {
	frames := framesWithBytes(3000, 130) // ~520 KB: three chunks
	var rows traceRows
	for i := range frames {
		require.NoError(t, rows.add("c", &frames[i], 1, canonical))
	}
	for i, f := range frames {
		require.Equal(t, f.Input, "0x"+hex.EncodeToString([]byte(rows.input[i])), "input of frame %d", i)
		require.Equal(t, f.Output, "0x"+hex.EncodeToString([]byte(rows.output[i])), "output of frame %d", i)
	}
}

// BenchmarkTraceRows turns 500 heights' frames (89 a height, as the
// simulated chain's default mix traces, 68 bytes of input and 22 of
// output each) into traces rows.
func BenchmarkTraceRows(b *testing.B) {
	frames := framesWithBytes(500*89, 68)
	b.ReportAllocs()
	for b.Loop() {
		var rows traceRows
		rows.grow(len(frames))
		for i := range frames {
			if err := rows.add("c", &frames[i], 1, canonical); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(frames)), "ns/frame")
}
