package activity

import (
	"math"
	"sync/atomic"

	"github.com/tideline-dev/tideline/pkg/chaindata"
)

// A range's chunks (range.go) hold index.write_batch heights, or fewer
// when the blocks are heavy: about index.write_batch_rows rows at most.
// A chunk's rows are known only once it is fetched, so each chunk is sized
// from the rows per height of the last chunk this process fetched for the
// chain (the ranges of a catch-up are neighbours, and blocks change size
// slowly along a chain); before any, a probe of probeChunk heights.
//
// Why rows: a chunk's memory (its answers, decoded blocks, insert
// columns) and its insert's size follow its rows, not its heights. A range
// holds two chunks, one written while the next is fetched, and a worker
// runs index.range_concurrency ranges: with 150-transaction blocks, 500
// heights were ~375,000 rows and the worker's peak RSS 3.4 GB.

// probeChunk is the first chunk's heights while no chunk of the chain has
// been fetched in this process.
const probeChunk = 32

// rowsEstimate is the rows per height of the last chunk fetched, shared by
// a process's ranges of one chain; the zero value knows nothing.
type rowsEstimate struct{ bits atomic.Uint64 }

// blockRows is what one height adds to a chunk: its block, transactions,
// logs and call frames.
func blockRows(d *chaindata.BlockData) int {
	return 1 + len(d.Transactions) + len(d.Logs) + len(d.Traces)
}

// record keeps the rows per height of a fetched chunk (nothing for an
// empty one: every height failed).
func (e *rowsEstimate) record(blocks []*chaindata.BlockData) {
	if len(blocks) == 0 {
		return
	}
	rows := 0
	for _, b := range blocks {
		rows += blockRows(b)
	}
	e.bits.Store(math.Float64bits(float64(rows) / float64(len(blocks))))
}

// get returns the rows per height, ok false before any record.
func (e *rowsEstimate) get() (float64, bool) {
	v := math.Float64frombits(e.bits.Load())
	return v, v > 0
}

// chunkLen is how many of the `left` heights still to fetch the next chunk
// takes: writeBatch, fewer when rowsBound (0: none) divided by the rows
// per height est is smaller, probeChunk when est is not known; at least 1.
func chunkLen(left, writeBatch, rowsBound int, est float64, known bool) int {
	n := writeBatch
	if rowsBound > 0 {
		if !known {
			n = min(n, probeChunk)
		} else {
			n = min(n, int(float64(rowsBound)/est))
		}
	}
	return max(1, min(n, left))
}
