package storage

import (
	"cmp"
	"slices"
	"time"
	"unsafe"

	"github.com/tideline-dev/tideline/pkg/chaindata"
)

// Rows are built column by column: one typed slice per column, sized once,
// handed to the driver whole (insertColumns). The column order of each
// columns() is the order of its insert's column list in queries.go and
// reorg.go; TestColumnsMatchColumnLists checks it.

// view returns the bytes as a string without copying them. The raw JSON
// blobs are most of a block's bytes (~61 KB of ~62 KB in the default mix):
// handed to the driver as [][]byte, each is converted to a string (an
// allocation and a copy) before the driver copies it again into its column
// buffer, which made column-wise slower than row-wise appends
// (BenchmarkBuildRows). The driver copies a []string's values into its
// buffer during Append and keeps no reference, and WriteBlocks never
// modifies the caller's bytes, so the strings never see a change.
func view(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// storedPositions is what is stored at one height with a canonical newest
// row: the block, and the transaction and log positions. It holds what a
// write of the height must replace or supersede: the block hash of each
// row (kept in the main tables' tombstones), and every look-up key of each
// row (hashes, addresses, time), which a rewrite tombstones when the new
// row lacks it (lookups.go).
type storedPositions struct {
	block *storedBlock // nil: no canonical block row
	txs   map[uint32]storedTx
	logs  map[uint32]storedLog
}

type storedBlock struct {
	hash, parentHash string
	timestamp        uint32
}

type storedTx struct {
	blockHash, hash, from, to, contract string
}

type storedLog struct {
	blockHash, address string
}

// rowSet is everything one WriteBlocks call inserts.
type rowSet struct {
	txs     txRows
	logs    logRows
	blocks  blockRows
	marks   markRows
	lookups lookupRows
	// transfers are the token transfer tables' rows (transfers_write.go);
	// nil when turned off.
	transfers *transferSet
	// traces are the call traces' rows (traces_rows.go).
	traces traceSet
}

// tableRows is one insert of a rowSet: the table and its columns, the
// number of rows and the column slices.
type tableRows struct {
	stmt insertStmt
	n    int
	cols []any
}

// inserts lists the inserts of a rowSet in the order they are sent (see
// WriteBlocks for why): the look-up tables, transactions, logs, blocks,
// and the indexed_heights marks last. Empty ones are skipped by the caller.
func (r *rowSet) inserts() []tableRows {
	l := &r.lookups
	return slices.Concat([]tableRows{
		{insertStmt{tableTxByHash, txByHashColumns}, l.txByHash.len(), l.txByHash.columns()},
		{insertStmt{tableAddressTxs, addressTxColumns}, l.addressTxs.len(), l.addressTxs.columns()},
		{insertStmt{tableAddressLogs, addressLogColumns}, l.addressLogs.len(), l.addressLogs.columns()},
		{insertStmt{tableTopicHeights, topicHeightColumns}, l.topics.len(), l.topics.columns()},
		{insertStmt{tableAddressTraces, addressTraceColumns}, r.traces.addresses.len(), r.traces.addresses.columns()},
		{insertStmt{tableBlockByHash, blockByHashColumns}, l.blockByHash.len(), l.blockByHash.columns()},
		{insertStmt{tableBlockByTime, blockByTimeColumns}, l.blockByTime.len(), l.blockByTime.columns()},
	}, r.transfers.lookupInserts(), []tableRows{
		{insertStmt{tableTransactions, transactionRewriteColumns}, r.txs.len(), r.txs.columns()},
		{insertStmt{tableLogs, logRewriteColumns}, r.logs.len(), r.logs.columns()},
		r.transfers.mainInsert(),
		{insertStmt{tableTraces, traceColumns}, r.traces.frames.len(), r.traces.frames.columns()},
		{insertStmt{tableBlocks, blockRewriteColumns}, r.blocks.len(), r.blocks.columns()},
		{insertStmt{tableIndexedHeights, r.marks.columnNames()}, r.marks.len(), r.marks.columns()},
	})
}

// buildRows turns blocks into rows: canonical rows for every block,
// transaction and log and their look-up rows, a tombstone for every stale
// position (stored canonical, absent from the new block) and for every
// stored look-up key the new block lacks, and one mark per height.
func buildRows(chainID string, blocks []*chaindata.BlockData, stale map[uint64]storedPositions, version uint64, now time.Time) *rowSet {
	nTx, nLog := 0, 0
	for _, d := range blocks {
		nTx += len(d.Transactions)
		nLog += len(d.Logs)
	}
	nBlocks := len(blocks)
	for _, p := range stale {
		nTx += len(p.txs)
		nLog += len(p.logs)
		nBlocks++
	}
	// In the tables' key order (height, then position): ClickHouse sorts
	// an insert block by the key unless it already is. Ranges write their
	// chunks ascending, so this is a check; a caller that passes heights
	// in another order (WriteBlocks takes any) costs a sort of pointers
	// here, which spares the server copying every string column of the
	// insert into the sorted order.
	if !slices.IsSortedFunc(blocks, byHeight) {
		blocks = slices.SortedFunc(slices.Values(blocks), byHeight)
	}
	r := &rowSet{}
	r.txs.grow(nTx)
	r.logs.grow(nLog)
	r.blocks.grow(len(blocks))
	r.marks.grow(len(blocks))
	r.lookups.grow(nBlocks, nTx, nLog)
	indexedAt := now.Unix()

	for _, d := range blocks {
		b := &d.Block
		for i := range d.Transactions {
			r.txs.add(chainID, &d.Transactions[i], version, canonical)
		}
		for i := range d.Logs {
			r.logs.add(chainID, &d.Logs[i], version, canonical)
		}
		r.lookups.addBlock(chainID, d, version)
		if p, ok := stale[b.Number]; ok {
			r.addTombstones(chainID, b.Number, p,
				superseded(p.txs, d.Transactions, func(t *chaindata.Transaction) uint32 { return t.Index }),
				superseded(p.logs, d.Logs, func(l *chaindata.Log) uint32 { return l.LogIndex }),
				version)
			r.lookups.addTombstones(chainID, b.Number, p, d, version)
		}
		r.blocks.add(chainID, b, version, canonical)
		r.marks.add(chainID, b.Number, b.Hash, indexedAt, version, d.Traced)
	}
	r.lookups.sort()
	return r
}

func byHeight(a, b *chaindata.BlockData) int { return cmp.Compare(a.Block.Number, b.Block.Number) }

// addTombstones supersedes the given transaction and log positions of one
// height with tombstones: the key, the superseded row's block hash (for
// operators), zero values elsewhere and is_canonical = 0. WriteBlocks and
// RemoveBlock both make them here.
func (r *rowSet) addTombstones(chainID string, height uint64, p storedPositions, txs, logs []uint32, version uint64) {
	for _, pos := range txs {
		r.txs.add(chainID, &chaindata.Transaction{BlockNumber: height, BlockHash: p.txs[pos].blockHash, Index: pos}, version, tombstone)
	}
	for _, pos := range logs {
		r.logs.add(chainID, &chaindata.Log{BlockNumber: height, BlockHash: p.logs[pos].blockHash, LogIndex: pos}, version, tombstone)
	}
}

// superseded returns, ascending, the stored positions that none of items
// has: the rows a rewrite must tombstone.
func superseded[V, T any](stored map[uint32]V, items []T, pos func(*T) uint32) []uint32 {
	if len(stored) == 0 {
		return nil
	}
	keep := make(map[uint32]bool, len(items))
	for i := range items {
		keep[pos(&items[i])] = true
	}
	var out []uint32
	for p := range stored {
		if !keep[p] {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// sortedPositions lists every stored position, ascending.
func sortedPositions[V any](m map[uint32]V) []uint32 {
	out := make([]uint32, 0, len(m))
	for p := range m {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// blockRows holds rows of blockRewriteColumns.
type blockRows struct {
	chainID, hash, parentHash []string
	number                    []uint64
	timestamp                 []int64
	miner                     []string
	gasUsed, gasLimit         []uint64
	baseFee                   []string
	size                      []uint64
	txCount, logCount         []uint32
	raw                       []string
	version                   []uint64
	canonical                 []uint8
}

func (c *blockRows) grow(n int) {
	c.chainID, c.number, c.hash, c.parentHash = make([]string, 0, n), make([]uint64, 0, n), make([]string, 0, n), make([]string, 0, n)
	c.timestamp, c.miner, c.gasUsed, c.gasLimit = make([]int64, 0, n), make([]string, 0, n), make([]uint64, 0, n), make([]uint64, 0, n)
	c.baseFee, c.size, c.txCount, c.logCount = make([]string, 0, n), make([]uint64, 0, n), make([]uint32, 0, n), make([]uint32, 0, n)
	c.raw, c.version, c.canonical = make([]string, 0, n), make([]uint64, 0, n), make([]uint8, 0, n)
}

func (c *blockRows) add(chainID string, b *chaindata.Block, version uint64, canon uint8) {
	c.chainID = append(c.chainID, chainID)
	c.number = append(c.number, b.Number)
	c.hash = append(c.hash, b.Hash)
	c.parentHash = append(c.parentHash, b.ParentHash)
	c.timestamp = append(c.timestamp, int64(b.Timestamp)) // checkBlockData: fits 32 bits
	c.miner = append(c.miner, b.Miner)
	c.gasUsed = append(c.gasUsed, b.GasUsed)
	c.gasLimit = append(c.gasLimit, b.GasLimit)
	c.baseFee = append(c.baseFee, b.BaseFeePerGas)
	c.size = append(c.size, b.Size)
	c.txCount = append(c.txCount, b.TxCount)
	c.logCount = append(c.logCount, b.LogCount)
	c.raw = append(c.raw, view(b.Raw))
	c.version = append(c.version, version)
	c.canonical = append(c.canonical, canon)
}

func (c *blockRows) len() int { return len(c.number) }

func (c *blockRows) columns() []any {
	return []any{
		c.chainID, c.number, c.hash, c.parentHash, c.timestamp, c.miner,
		c.gasUsed, c.gasLimit, c.baseFee, c.size, c.txCount,
		c.logCount, c.raw, c.version, c.canonical,
	}
}

// txRows holds rows of transactionRewriteColumns.
type txRows struct {
	chainID, blockHash, hash              []string
	blockNumber, typ, nonce, gas, gasUsed []uint64
	index, logCount                       []uint32
	from, to, value, gasPrice             []string
	effectiveGasPrice, contractAddress    []string
	status, canonical                     []uint8
	raw, receiptRaw                       []string
	version                               []uint64
}

func (c *txRows) grow(n int) {
	c.chainID, c.blockNumber, c.blockHash, c.index = make([]string, 0, n), make([]uint64, 0, n), make([]string, 0, n), make([]uint32, 0, n)
	c.hash, c.typ, c.from, c.to = make([]string, 0, n), make([]uint64, 0, n), make([]string, 0, n), make([]string, 0, n)
	c.value, c.nonce, c.gas, c.gasPrice = make([]string, 0, n), make([]uint64, 0, n), make([]uint64, 0, n), make([]string, 0, n)
	c.status, c.gasUsed, c.effectiveGasPrice, c.contractAddress = make([]uint8, 0, n), make([]uint64, 0, n), make([]string, 0, n), make([]string, 0, n)
	c.logCount, c.raw, c.receiptRaw, c.version = make([]uint32, 0, n), make([]string, 0, n), make([]string, 0, n), make([]uint64, 0, n)
	c.canonical = make([]uint8, 0, n)
}

func (c *txRows) add(chainID string, t *chaindata.Transaction, version uint64, canon uint8) {
	c.chainID = append(c.chainID, chainID)
	c.blockNumber = append(c.blockNumber, t.BlockNumber)
	c.blockHash = append(c.blockHash, t.BlockHash)
	c.index = append(c.index, t.Index)
	c.hash = append(c.hash, t.Hash)
	c.typ = append(c.typ, t.Type)
	c.from = append(c.from, t.From)
	c.to = append(c.to, t.To)
	c.value = append(c.value, t.Value)
	c.nonce = append(c.nonce, t.Nonce)
	c.gas = append(c.gas, t.Gas)
	c.gasPrice = append(c.gasPrice, t.GasPrice)
	c.status = append(c.status, t.Status)
	c.gasUsed = append(c.gasUsed, t.GasUsed)
	c.effectiveGasPrice = append(c.effectiveGasPrice, t.EffectiveGasPrice)
	c.contractAddress = append(c.contractAddress, t.ContractAddress)
	c.logCount = append(c.logCount, t.LogCount)
	c.raw = append(c.raw, view(t.Raw))
	c.receiptRaw = append(c.receiptRaw, view(t.ReceiptRaw))
	c.version = append(c.version, version)
	c.canonical = append(c.canonical, canon)
}

func (c *txRows) len() int { return len(c.blockNumber) }

func (c *txRows) columns() []any {
	return []any{
		c.chainID, c.blockNumber, c.blockHash, c.index, c.hash, c.typ,
		c.from, c.to, c.value, c.nonce, c.gas, c.gasPrice,
		c.status, c.gasUsed, c.effectiveGasPrice, c.contractAddress,
		c.logCount, c.raw, c.receiptRaw, c.version, c.canonical,
	}
}

// logRows holds rows of logRewriteColumns.
type logRows struct {
	chainID, blockHash, txHash, address []string
	blockNumber, version                []uint64
	txIndex, logIndex                   []uint32
	topic0, topic1, topic2, topic3      []string
	topicCount, canonical               []uint8
	data                                []string
	raw                                 []string
}

func (c *logRows) grow(n int) {
	c.chainID, c.blockNumber, c.blockHash, c.txHash = make([]string, 0, n), make([]uint64, 0, n), make([]string, 0, n), make([]string, 0, n)
	c.txIndex, c.logIndex, c.address, c.topic0 = make([]uint32, 0, n), make([]uint32, 0, n), make([]string, 0, n), make([]string, 0, n)
	c.topic1, c.topic2, c.topic3, c.topicCount = make([]string, 0, n), make([]string, 0, n), make([]string, 0, n), make([]uint8, 0, n)
	c.data, c.raw, c.version, c.canonical = make([]string, 0, n), make([]string, 0, n), make([]uint64, 0, n), make([]uint8, 0, n)
}

func (c *logRows) add(chainID string, l *chaindata.Log, version uint64, canon uint8) {
	var topics [4]string
	copy(topics[:], l.Topics) // checkBlockData: at most 4
	c.chainID = append(c.chainID, chainID)
	c.blockNumber = append(c.blockNumber, l.BlockNumber)
	c.blockHash = append(c.blockHash, l.BlockHash)
	c.txHash = append(c.txHash, l.TxHash)
	c.txIndex = append(c.txIndex, l.TxIndex)
	c.logIndex = append(c.logIndex, l.LogIndex)
	c.address = append(c.address, l.Address)
	c.topic0 = append(c.topic0, topics[0])
	c.topic1 = append(c.topic1, topics[1])
	c.topic2 = append(c.topic2, topics[2])
	c.topic3 = append(c.topic3, topics[3])
	c.topicCount = append(c.topicCount, uint8(len(l.Topics)))
	c.data = append(c.data, l.Data)
	c.raw = append(c.raw, view(l.Raw))
	c.version = append(c.version, version)
	c.canonical = append(c.canonical, canon)
}

func (c *logRows) len() int { return len(c.blockNumber) }

func (c *logRows) columns() []any {
	return []any{
		c.chainID, c.blockNumber, c.blockHash, c.txHash, c.txIndex,
		c.logIndex, c.address, c.topic0, c.topic1, c.topic2, c.topic3,
		c.topicCount, c.data, c.raw, c.version, c.canonical,
	}
}

// markRows holds rows of markColumns.
type markRows struct {
	chainID, hash []string
	number        []uint64
	indexedAt     []int64
	version       []uint64
	traced        []uint8
	legacy        bool // without traced: ClickHouse.beforeTraces
}

func (c *markRows) grow(n int) {
	c.chainID, c.number, c.hash = make([]string, 0, n), make([]uint64, 0, n), make([]string, 0, n)
	c.indexedAt, c.version, c.traced = make([]int64, 0, n), make([]uint64, 0, n), make([]uint8, 0, n)
}

func (c *markRows) add(chainID string, number uint64, hash string, indexedAt int64, version uint64, traced bool) {
	c.chainID = append(c.chainID, chainID)
	c.number = append(c.number, number)
	c.hash = append(c.hash, hash)
	c.indexedAt = append(c.indexedAt, indexedAt)
	c.version = append(c.version, version)
	c.traced = append(c.traced, flag(traced))
}

func (c *markRows) len() int { return len(c.number) }

func (c *markRows) columns() []any {
	if c.legacy {
		return []any{c.chainID, c.number, c.hash, c.indexedAt, c.version}
	}
	return []any{c.chainID, c.number, c.hash, c.indexedAt, c.version, c.traced}
}

func (c *markRows) columnNames() []string {
	if c.legacy {
		return indexedHeightColumns
	}
	return markColumns
}
