package storage

import (
	"context"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"unsafe"

	"github.com/tideline-dev/tideline/pkg/chaindata"
)

// Call traces in the one write path (migrations 0051-0053): the frames of
// a traced block go to traces, keyed by (block_number, tx_index,
// trace_index), and every inner frame's addresses to address_traces, in
// the same WriteBlocks call and with the same version as the block, under
// the rules of transactions and address_txs: a rewrite of a height
// supersedes every stored frame position the new block's trace lacks, and
// every stored address key its new frame at that position lacks, with a
// tombstone. A block written without its trace (tracing off) over the
// same block keeps the stored frames (they are still its frames); over
// another block, every stored frame of the height is superseded.

const (
	tableTraces        = "traces"
	tableAddressTraces = "address_traces"
)

// Column lists of the traces inserts, in the order of columns() below.
var (
	traceColumns = []string{
		"chain_id", "block_number", "block_hash", "tx_index", "trace_index", "tx_hash", "trace_address", "depth",
		"type", "from_address", "to_address", "value", "gas", "gas_used", "input", "output", "error",
		"revert_reason", "reverted", "subtraces", "version", "is_canonical",
	}
	addressTraceColumns = []string{
		"chain_id", "address", "block_number", "tx_index", "trace_index",
		"is_from", "is_to", "is_creation", "transfers", "is_canonical", "version",
	}
	// markColumns are the indexed_heights columns WriteBlocks writes:
	// the mark says whether the height's traces are in (0044).
	markColumns = append(slices.Clone(indexedHeightColumns), "traced")
)

// traceSet is what one write inserts into the two traces tables.
type traceSet struct {
	frames    traceRows
	addresses addressTraceRows
}

// framePos is a frame's position in its height.
type framePos struct{ tx, index uint32 }

// storedFrame is what a height holds canonical at a frame position: the
// block it belongs to and what its look-up rows are keyed by.
type storedFrame struct {
	blockHash, from, to string
	typ                 chaindata.TraceType
	depth               uint16
}

// addBlockTraces adds the rows of one block's frames (when it is traced)
// and the tombstones of the stored frames and look-up keys it supersedes
// (stored: what the height holds; nil when nothing). d nil is a removed
// height: everything stored is superseded. A frame whose input or output
// is not 0x hex is an error (and the rows added so far are not to be
// written).
func (s *traceSet) addBlockTraces(chainID string, height uint64, d *chaindata.BlockData, stored map[framePos]storedFrame, version uint64) error {
	var fresh map[framePos]*chaindata.Trace
	if d != nil && d.Traced {
		fresh = make(map[framePos]*chaindata.Trace, len(d.Traces))
		for i := range d.Traces {
			t := &d.Traces[i]
			if err := s.frames.add(chainID, t, version, canonical); err != nil {
				return err
			}
			if t.Depth() > 0 {
				s.addresses.addFrame(chainID, t, version, canonical)
			}
			if len(stored) > 0 {
				fresh[framePos{t.TxIndex, t.Index}] = t
			}
		}
	}
	if len(stored) == 0 {
		return nil
	}
	positions := make([]framePos, 0, len(stored))
	for p := range stored {
		positions = append(positions, p)
	}
	slices.SortFunc(positions, func(a, b framePos) int {
		if a.tx != b.tx {
			return int(a.tx) - int(b.tx)
		}
		return int(a.index) - int(b.index)
	})
	for _, p := range positions {
		old := stored[p]
		if d != nil && !d.Traced && old.blockHash == d.Block.Hash {
			continue // the same block, written without its trace: its frames stay
		}
		nt := fresh[p]
		if nt == nil {
			tomb := chaindata.Trace{BlockNumber: height, BlockHash: old.blockHash, TxIndex: p.tx, Index: p.index}
			if err := s.frames.add(chainID, &tomb, version, tombstone); err != nil {
				return err
			}
		}
		if old.depth == 0 {
			continue // top-level frames have no look-up rows
		}
		var keep chaindata.Parties
		if nt != nil && nt.Depth() > 0 {
			keep = chaindata.FrameParties(nt.From, nt.To)
		}
		oldFrame := chaindata.Trace{BlockNumber: height, TxIndex: p.tx, Index: p.index, From: old.from, To: old.to, Type: old.typ}
		addrs := chaindata.FrameParties(old.from, old.to)
		for _, a := range addrs.List() {
			if !keep.Has(a) {
				s.addresses.add(chainID, a, &oldFrame, version, tombstone)
			}
		}
	}
	return nil
}

// FrameBytesError is a frame whose input or output is not 0x-prefixed
// hex: traces stores their bytes (0058), so it cannot be written.
type FrameBytesError struct {
	Height    uint64
	Tx, Index uint32
	Field     string // "input" or "output"
	Err       error
}

func (e *FrameBytesError) Error() string {
	return fmt.Sprintf("frame %d of transaction %d at height %d: %s is not 0x hex: %v", e.Index, e.Tx, e.Height, e.Field, e.Err)
}

func (e *FrameBytesError) Unwrap() error { return e.Err }

// frameBytes is the bytes of a frame's input or output, as a string for
// the String column: "0x" and "" (a tombstone's) are none. The bytes are
// decoded into c.bytes, whose chunks are never written again, and viewed
// as a string (see view): one allocation for many frames instead of two
// a field.
func (c *traceRows) frameBytes(t *chaindata.Trace, field, text string) (string, error) {
	if text == "" {
		return "", nil
	}
	var err error
	if !strings.HasPrefix(text, "0x") {
		err = fmt.Errorf("no 0x prefix in %.12q", text)
	} else {
		digits := unsafe.Slice(unsafe.StringData(text[2:]), len(text)-2) // only read
		n := len(digits) / 2
		if cap(c.bytes)-len(c.bytes) < n {
			c.bytes = make([]byte, 0, max(frameBytesChunk, n))
		}
		at := len(c.bytes)
		dst := c.bytes[at : at+n : at+n]
		if _, err = hex.Decode(dst, digits); err == nil {
			c.bytes = c.bytes[:at+n]
			return view(dst), nil
		}
	}
	return "", &FrameBytesError{Height: t.BlockNumber, Tx: t.TxIndex, Index: t.Index, Field: field, Err: err}
}

// frameBytesChunk is the size of c.bytes' chunks: a default-mix height's
// frames carry ~6 KB of input and output.
const frameBytesChunk = 256 << 10

// sort puts address_traces' rows in its key order (see lookupRows.sort);
// traces' rows come in key order from blocks in height order.
func (s *traceSet) sort() {
	a := &s.addresses
	inStringKeyOrder(a.address, func(i, j int) int {
		if c := comparePosition(a.blockNumber[i], a.blockNumber[j], a.txIndex[i], a.txIndex[j]); c != 0 {
			return c
		}
		return int(a.traceIndex[i]) - int(a.traceIndex[j])
	}, a.columns())
}

// traceRows holds rows of traceColumns.
type traceRows struct {
	chainID, blockHash, txHash, typ, from, to, value []string
	input, output, errText, reason                   []string
	blockNumber, gas, gasUsed, version               []uint64
	txIndex, traceIndex, subtraces                   []uint32
	address                                          [][]uint32
	depth                                            []uint16
	reverted, canonical                              []uint8
	// bytes holds the input and output columns' bytes (frameBytes).
	bytes []byte
}

// grow makes room for n more rows (a write's frames), keeping the rows
// added: appending a batch's frames to empty columns was 2.8 % of a
// traced heavy-mix worker's CPU, in growslice.
func (c *traceRows) grow(n int) {
	for _, col := range []*[]string{&c.chainID, &c.blockHash, &c.txHash, &c.typ, &c.from, &c.to, &c.value, &c.input, &c.output, &c.errText, &c.reason} {
		*col = slices.Grow(*col, n)
	}
	for _, col := range []*[]uint64{&c.blockNumber, &c.gas, &c.gasUsed, &c.version} {
		*col = slices.Grow(*col, n)
	}
	for _, col := range []*[]uint32{&c.txIndex, &c.traceIndex, &c.subtraces} {
		*col = slices.Grow(*col, n)
	}
	c.address, c.depth = slices.Grow(c.address, n), slices.Grow(c.depth, n)
	c.reverted, c.canonical = slices.Grow(c.reverted, n), slices.Grow(c.canonical, n)
}

func (c *traceRows) add(chainID string, t *chaindata.Trace, version uint64, canon uint8) error {
	input, err := c.frameBytes(t, "input", t.Input)
	if err != nil {
		return err
	}
	output, err := c.frameBytes(t, "output", t.Output)
	if err != nil {
		return err
	}
	c.chainID = append(c.chainID, chainID)
	c.blockNumber = append(c.blockNumber, t.BlockNumber)
	c.blockHash = append(c.blockHash, t.BlockHash)
	c.txIndex = append(c.txIndex, t.TxIndex)
	c.traceIndex = append(c.traceIndex, t.Index)
	c.txHash = append(c.txHash, t.TxHash)
	addr := t.Address
	if addr == nil {
		addr = []uint32{}
	}
	c.address = append(c.address, addr)
	c.depth = append(c.depth, uint16(len(t.Address)))
	c.typ = append(c.typ, string(t.Type))
	c.from = append(c.from, t.From)
	c.to = append(c.to, t.To)
	c.value = append(c.value, t.Value)
	c.gas = append(c.gas, t.Gas)
	c.gasUsed = append(c.gasUsed, t.GasUsed)
	c.input = append(c.input, input)
	c.output = append(c.output, output)
	c.errText = append(c.errText, t.Error)
	c.reason = append(c.reason, t.RevertReason)
	c.reverted = append(c.reverted, flag(t.Reverted))
	c.subtraces = append(c.subtraces, t.Subtraces)
	c.version = append(c.version, version)
	c.canonical = append(c.canonical, canon)
	return nil
}

func (c *traceRows) len() int { return len(c.blockNumber) }

func (c *traceRows) columns() []any {
	return []any{
		c.chainID, c.blockNumber, c.blockHash, c.txIndex, c.traceIndex, c.txHash, c.address, c.depth,
		c.typ, c.from, c.to, c.value, c.gas, c.gasUsed, c.input, c.output, c.errText,
		c.reason, c.reverted, c.subtraces, c.version, c.canonical,
	}
}

// addressTraceRows holds rows of addressTraceColumns.
type addressTraceRows struct {
	chainID, address                               []string
	blockNumber, version                           []uint64
	txIndex, traceIndex                            []uint32
	isFrom, isTo, isCreation, transfers, canonical []uint8
}

// grow makes room for n more rows, keeping the rows added.
func (c *addressTraceRows) grow(n int) {
	c.chainID, c.address = slices.Grow(c.chainID, n), slices.Grow(c.address, n)
	c.blockNumber, c.version = slices.Grow(c.blockNumber, n), slices.Grow(c.version, n)
	c.txIndex, c.traceIndex = slices.Grow(c.txIndex, n), slices.Grow(c.traceIndex, n)
	for _, col := range []*[]uint8{&c.isFrom, &c.isTo, &c.isCreation, &c.transfers, &c.canonical} {
		*col = slices.Grow(*col, n)
	}
}

// addFrame lists an inner frame under each of its addresses.
func (c *addressTraceRows) addFrame(chainID string, t *chaindata.Trace, version uint64, canon uint8) {
	addrs := chaindata.FrameParties(t.From, t.To)
	for _, a := range addrs.List() {
		c.add(chainID, a, t, version, canon)
	}
}

func (c *addressTraceRows) add(chainID, address string, t *chaindata.Trace, version uint64, canon uint8) {
	c.chainID = append(c.chainID, chainID)
	c.address = append(c.address, address)
	c.blockNumber = append(c.blockNumber, t.BlockNumber)
	c.txIndex = append(c.txIndex, t.TxIndex)
	c.traceIndex = append(c.traceIndex, t.Index)
	c.isFrom = append(c.isFrom, flag(address == t.From))
	c.isTo = append(c.isTo, flag(address == t.To && !t.Type.IsCreation()))
	c.isCreation = append(c.isCreation, flag(address == t.To && t.Type.IsCreation()))
	c.transfers = append(c.transfers, flag(canon == canonical && t.Transfers()))
	c.canonical = append(c.canonical, canon)
	c.version = append(c.version, version)
}

func (c *addressTraceRows) len() int { return len(c.address) }

func (c *addressTraceRows) columns() []any {
	return []any{
		c.chainID, c.address, c.blockNumber, c.txIndex, c.traceIndex,
		c.isFrom, c.isTo, c.isCreation, c.transfers, c.canonical, c.version,
	}
}

// addTraces adds to r the traces rows of a write of blocks (nil: the
// removal of the heights in ranges): each traced block's frames, and
// tombstones of the stored frames they supersede, read first.
func (c *db) addTraces(ctx context.Context, chainID, where string, ranges []chaindata.HeightRange, blocks []*chaindata.BlockData, r *rowSet, version uint64) error {
	if c.beforeTraces {
		r.marks.legacy = true
		return nil
	}
	stored, err := c.storedTraces(ctx, chainID, ranges)
	if err != nil {
		return fmt.Errorf("storage: reading stored traces for chain %q %s: %w", chainID, where, err)
	}
	if blocks == nil {
		for _, rg := range ranges {
			for h := rg.From; h <= rg.To; h++ {
				if err := r.traces.addBlockTraces(chainID, h, nil, stored[h], version); err != nil {
					return err
				}
			}
		}
	}
	if !slices.IsSortedFunc(blocks, byHeight) {
		blocks = slices.SortedFunc(slices.Values(blocks), byHeight)
	}
	frames, inner := 0, 0
	for _, d := range blocks {
		frames += len(d.Traces)
		for i := range d.Traces {
			if d.Traces[i].Depth() > 0 {
				inner++
			}
		}
	}
	r.traces.frames.grow(frames)
	r.traces.addresses.grow(2 * inner) // at most two parties a frame
	for _, d := range blocks {
		if err := r.traces.addBlockTraces(chainID, d.Block.Number, d, stored[d.Block.Number], version); err != nil {
			return fmt.Errorf("storage: writing traces of chain %q %s: %w", chainID, where, err)
		}
	}
	r.traces.sort()
	return nil
}
