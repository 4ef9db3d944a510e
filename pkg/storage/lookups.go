package storage

import (
	"cmp"
	"strings"

	"github.com/tideline-dev/tideline/pkg/chaindata"
)

// Look-up tables (migrations 0010-0014): what a reader searches by (a hash,
// an address, a time) leading the key, so a look-up reads a few granules
// instead of the whole chain. They hold pointers, not data: a reader finds
// (block_number, position) here and reads the row from the main table.
//
// WriteBlocks and RemoveBlock write them in the same call as the main rows
// and with the same version, under the rules of the main tables: one row
// per key, the newest version wins, is_canonical = 0 is a tombstone. What
// differs is the key: a main row is keyed by its position, which a rewrite
// of the height reuses, whereas a look-up row is keyed by what the row
// held (its hash, its addresses, the block's time). So a rewrite that puts
// another transaction, log or block at a stored position tombstones every
// look-up key of the stored row that the new row does not have; keys the
// new row has are overwritten by its canonical row, and a key is never
// both tombstoned and written in one insert (optimize_on_insert = 0 and
// 18.16 keep both rows of an insert, and which one wins a tie of versions
// is not defined).
//
// The rows are built here, on the client, and sent as five more inserts
// (design a), rather than derived on the server by materialized views fed
// by the main inserts (design b). Measured on fresh ranges of 1,000 blocks
// (BenchmarkLookupDesigns; docs/performance.md), the two cost about the
// same CPU in total, but the views put 50-90 ms more of it per 1,000
// blocks on the server (they run their SELECT and arrayJoin inside every
// insert) and take as much off the worker. The worker is the side that
// scales out (more worker processes) and ClickHouse the side every reader
// shares and a catch-up at scale is bound by, so the work stays on the
// client. The views would also need more than the fresh path shows: a
// tombstone row in the main insert carrying the old hashes and addresses
// for every replaced row, including a second row, older by one version,
// at a position whose row is replaced (the main insert holds only the new
// row there); their rows would be written after the main rows, which
// loses tombstones when a call fails half-way (see WriteBlocks on the
// order); and on a cluster (ON CLUSTER, Replicated tables) the
// deduplication of a retried insert would have to hold for the views'
// inserts too.

// Column lists of the look-up inserts, in the order of columns() below.
var (
	txByHashColumns    = []string{"chain_id", "hash", "block_number", "tx_index", "block_hash", "is_canonical", "version"}
	blockByHashColumns = []string{"chain_id", "hash", "number", "is_canonical", "version"}
	blockByTimeColumns = []string{"chain_id", "timestamp", "number", "is_canonical", "version"}
	addressTxColumns   = []string{
		"chain_id", "address", "block_number", "tx_index", "hash",
		"is_from", "is_to", "is_creation", "is_canonical", "version",
	}
	addressLogColumns = []string{"chain_id", "address", "block_number", "log_index", "topic0", "is_canonical", "version"}
)

// lookupRows is what one call inserts into the look-up tables.
type lookupRows struct {
	txByHash    txByHashRows
	blockByHash blockByHashRows
	blockByTime blockByTimeRows
	addressTxs  addressTxRows
	addressLogs addressLogRows
	topics      topicHeightRows // lookups_topics.go
}

// grow sizes the columns for blocks heights with txs transactions and logs
// logs. Most transactions name two addresses (sender and recipient, or
// sender and created contract).
func (l *lookupRows) grow(blocks, txs, logs int) {
	l.txByHash.grow(txs)
	l.blockByHash.grow(blocks)
	l.blockByTime.grow(blocks)
	l.addressTxs.grow(2 * txs)
	l.addressLogs.grow(logs)
	l.topics.grow(logs)
}

// addBlock adds the canonical look-up rows of one block: its hash and
// time, every transaction's hash and addresses, every log's address.
func (l *lookupRows) addBlock(chainID string, d *chaindata.BlockData, version uint64) {
	b := &d.Block
	l.blockByHash.add(chainID, b.Hash, b.Number, version, canonical)
	l.blockByTime.add(chainID, int64(b.Timestamp), b.Number, version, canonical) // checkBlockData: fits 32 bits
	for i := range d.Transactions {
		t := &d.Transactions[i]
		l.txByHash.add(chainID, t.Hash, t.BlockNumber, t.Index, t.BlockHash, version, canonical)
		addrs := txAddresses(t.From, t.To, t.ContractAddress)
		for _, a := range addrs.list[:addrs.n] {
			l.addressTxs.add(chainID, a, t.BlockNumber, t.Index, t.Hash, t.From, t.To, t.ContractAddress, version, canonical)
		}
	}
	for i := range d.Logs {
		lg := &d.Logs[i]
		topic0 := ""
		if len(lg.Topics) > 0 {
			topic0 = lg.Topics[0]
		}
		l.addressLogs.add(chainID, lg.Address, lg.BlockNumber, lg.LogIndex, topic0, version, canonical)
	}
	l.topics.addBlock(chainID, d, version)
}

// addTombstones supersedes the look-up keys of the rows stored at one
// height that the block written there now (nil: no block, RemoveBlock)
// does not have: the old block's hash and (time, height) when the block
// changed, and per stored transaction and log position the old hash and
// addresses the new row at that position lacks. The tombstone of an
// address row keeps the old transaction's hash and flags, for operators.
func (l *lookupRows) addTombstones(chainID string, height uint64, p storedPositions, d *chaindata.BlockData, version uint64) {
	if p.block != nil {
		if d == nil || d.Block.Hash != p.block.hash {
			l.blockByHash.add(chainID, p.block.hash, height, version, tombstone)
		}
		if d == nil || uint32(d.Block.Timestamp) != p.block.timestamp {
			l.blockByTime.add(chainID, int64(p.block.timestamp), height, version, tombstone)
		}
	}
	var newTxs map[uint32]*chaindata.Transaction
	var newLogs map[uint32]*chaindata.Log
	if d != nil && len(p.txs) > 0 {
		newTxs = byPosition(d.Transactions, func(t *chaindata.Transaction) uint32 { return t.Index })
	}
	if d != nil && len(p.logs) > 0 {
		newLogs = byPosition(d.Logs, func(l *chaindata.Log) uint32 { return l.LogIndex })
	}
	for _, pos := range sortedPositions(p.txs) {
		old := p.txs[pos]
		nt := newTxs[pos]
		if nt == nil || nt.Hash != old.hash {
			l.txByHash.add(chainID, old.hash, height, pos, old.blockHash, version, tombstone)
		}
		var keep txAddrs
		if nt != nil {
			keep = txAddresses(nt.From, nt.To, nt.ContractAddress)
		}
		addrs := txAddresses(old.from, old.to, old.contract)
		for _, a := range addrs.list[:addrs.n] {
			if !keep.has(a) {
				l.addressTxs.add(chainID, a, height, pos, old.hash, old.from, old.to, old.contract, version, tombstone)
			}
		}
	}
	for _, pos := range sortedPositions(p.logs) {
		old := p.logs[pos]
		if nl := newLogs[pos]; nl == nil || nl.Address != old.address {
			l.addressLogs.add(chainID, old.address, height, pos, "", version, tombstone)
		}
	}
}

// sort puts the rows of each look-up table in its key order (chain_id,
// the first key column, is the same in every row of a call). A look-up
// table leads with a hash or an address, so the rows come out of the
// blocks in random key order and the server would sort every insert, a
// permutation of every column by string comparisons, before writing its
// part; in order, it only checks the order. Measured, that moves more CPU
// off the server than it costs the worker (BenchmarkLookupDesigns,
// docs/performance.md), and ClickHouse is what bounds a catch-up.
func (l *lookupRows) sort() {
	t := &l.txByHash
	inKeyOrder(t.len(), func(i, j int) int {
		if c := strings.Compare(t.hash[i], t.hash[j]); c != 0 {
			return c
		}
		return comparePosition(t.blockNumber[i], t.blockNumber[j], t.txIndex[i], t.txIndex[j])
	}, t.columns())
	h := &l.blockByHash
	inKeyOrder(h.len(), func(i, j int) int {
		if c := strings.Compare(h.hash[i], h.hash[j]); c != 0 {
			return c
		}
		return cmp.Compare(h.number[i], h.number[j])
	}, h.columns())
	tm := &l.blockByTime
	inKeyOrder(tm.len(), func(i, j int) int {
		if c := cmp.Compare(tm.timestamp[i], tm.timestamp[j]); c != 0 {
			return c
		}
		return cmp.Compare(tm.number[i], tm.number[j])
	}, tm.columns())
	a := &l.addressTxs
	inStringKeyOrder(a.address, func(i, j int) int {
		return comparePosition(a.blockNumber[i], a.blockNumber[j], a.txIndex[i], a.txIndex[j])
	}, a.columns())
	g := &l.addressLogs
	inStringKeyOrder(g.address, func(i, j int) int {
		return comparePosition(g.blockNumber[i], g.blockNumber[j], g.logIndex[i], g.logIndex[j])
	}, g.columns())
	l.topics.sort()
}

// comparePosition orders positions by height, then index.
func comparePosition(n1, n2 uint64, i1, i2 uint32) int {
	if c := cmp.Compare(n1, n2); c != 0 {
		return c
	}
	return cmp.Compare(i1, i2)
}

func byPosition[T any](items []T, pos func(*T) uint32) map[uint32]*T {
	out := make(map[uint32]*T, len(items))
	for i := range items {
		out[pos(&items[i])] = &items[i]
	}
	return out
}

// txAddrs are the distinct addresses of one transaction that address_txs
// lists it under, in the order sender, recipient, created contract.
type txAddrs struct {
	list [3]string
	n    int
}

// txAddresses returns the distinct non-empty addresses among a
// transaction's sender, recipient and created contract: a transaction to
// itself is listed once (with both flags), and the empty recipient of a
// contract creation is not an address.
func txAddresses(from, to, contract string) txAddrs {
	var a txAddrs
	for _, s := range [3]string{from, to, contract} {
		if s != "" && !a.has(s) {
			a.list[a.n] = s
			a.n++
		}
	}
	return a
}

func (a *txAddrs) has(s string) bool {
	for _, x := range a.list[:a.n] {
		if x == s {
			return true
		}
	}
	return false
}

func flag(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

// txByHashRows holds rows of txByHashColumns.
type txByHashRows struct {
	chainID, hash, blockHash []string
	blockNumber, version     []uint64
	txIndex                  []uint32
	canonical                []uint8
}

func (c *txByHashRows) grow(n int) {
	c.chainID, c.hash, c.blockNumber, c.txIndex = make([]string, 0, n), make([]string, 0, n), make([]uint64, 0, n), make([]uint32, 0, n)
	c.blockHash, c.canonical, c.version = make([]string, 0, n), make([]uint8, 0, n), make([]uint64, 0, n)
}

func (c *txByHashRows) add(chainID, hash string, blockNumber uint64, txIndex uint32, blockHash string, version uint64, canon uint8) {
	c.chainID = append(c.chainID, chainID)
	c.hash = append(c.hash, hash)
	c.blockNumber = append(c.blockNumber, blockNumber)
	c.txIndex = append(c.txIndex, txIndex)
	c.blockHash = append(c.blockHash, blockHash)
	c.canonical = append(c.canonical, canon)
	c.version = append(c.version, version)
}

func (c *txByHashRows) len() int { return len(c.hash) }

func (c *txByHashRows) columns() []any {
	return []any{c.chainID, c.hash, c.blockNumber, c.txIndex, c.blockHash, c.canonical, c.version}
}

// blockByHashRows holds rows of blockByHashColumns.
type blockByHashRows struct {
	chainID, hash   []string
	number, version []uint64
	canonical       []uint8
}

func (c *blockByHashRows) grow(n int) {
	c.chainID, c.hash, c.number = make([]string, 0, n), make([]string, 0, n), make([]uint64, 0, n)
	c.canonical, c.version = make([]uint8, 0, n), make([]uint64, 0, n)
}

func (c *blockByHashRows) add(chainID, hash string, number, version uint64, canon uint8) {
	c.chainID = append(c.chainID, chainID)
	c.hash = append(c.hash, hash)
	c.number = append(c.number, number)
	c.canonical = append(c.canonical, canon)
	c.version = append(c.version, version)
}

func (c *blockByHashRows) len() int { return len(c.hash) }

func (c *blockByHashRows) columns() []any {
	return []any{c.chainID, c.hash, c.number, c.canonical, c.version}
}

// blockByTimeRows holds rows of blockByTimeColumns.
type blockByTimeRows struct {
	chainID         []string
	timestamp       []int64
	number, version []uint64
	canonical       []uint8
}

func (c *blockByTimeRows) grow(n int) {
	c.chainID, c.timestamp, c.number = make([]string, 0, n), make([]int64, 0, n), make([]uint64, 0, n)
	c.canonical, c.version = make([]uint8, 0, n), make([]uint64, 0, n)
}

func (c *blockByTimeRows) add(chainID string, timestamp int64, number, version uint64, canon uint8) {
	c.chainID = append(c.chainID, chainID)
	c.timestamp = append(c.timestamp, timestamp)
	c.number = append(c.number, number)
	c.canonical = append(c.canonical, canon)
	c.version = append(c.version, version)
}

func (c *blockByTimeRows) len() int { return len(c.number) }

func (c *blockByTimeRows) columns() []any {
	return []any{c.chainID, c.timestamp, c.number, c.canonical, c.version}
}

// addressTxRows holds rows of addressTxColumns.
type addressTxRows struct {
	chainID, address, hash              []string
	blockNumber, version                []uint64
	txIndex                             []uint32
	isFrom, isTo, isCreation, canonical []uint8
}

func (c *addressTxRows) grow(n int) {
	c.chainID, c.address, c.blockNumber, c.txIndex = make([]string, 0, n), make([]string, 0, n), make([]uint64, 0, n), make([]uint32, 0, n)
	c.hash, c.isFrom, c.isTo, c.isCreation = make([]string, 0, n), make([]uint8, 0, n), make([]uint8, 0, n), make([]uint8, 0, n)
	c.canonical, c.version = make([]uint8, 0, n), make([]uint64, 0, n)
}

// add lists the transaction (at blockNumber, txIndex, with hash and the
// three addresses) under address, with the flags of what address is to it.
func (c *addressTxRows) add(chainID, address string, blockNumber uint64, txIndex uint32, hash, from, to, contract string, version uint64, canon uint8) {
	c.chainID = append(c.chainID, chainID)
	c.address = append(c.address, address)
	c.blockNumber = append(c.blockNumber, blockNumber)
	c.txIndex = append(c.txIndex, txIndex)
	c.hash = append(c.hash, hash)
	c.isFrom = append(c.isFrom, flag(address == from))
	c.isTo = append(c.isTo, flag(address == to))
	c.isCreation = append(c.isCreation, flag(address == contract))
	c.canonical = append(c.canonical, canon)
	c.version = append(c.version, version)
}

func (c *addressTxRows) len() int { return len(c.address) }

func (c *addressTxRows) columns() []any {
	return []any{
		c.chainID, c.address, c.blockNumber, c.txIndex, c.hash,
		c.isFrom, c.isTo, c.isCreation, c.canonical, c.version,
	}
}

// addressLogRows holds rows of addressLogColumns.
type addressLogRows struct {
	chainID, address, topic0 []string
	blockNumber, version     []uint64
	logIndex                 []uint32
	canonical                []uint8
}

func (c *addressLogRows) grow(n int) {
	c.chainID, c.address, c.blockNumber, c.logIndex = make([]string, 0, n), make([]string, 0, n), make([]uint64, 0, n), make([]uint32, 0, n)
	c.topic0, c.canonical, c.version = make([]string, 0, n), make([]uint8, 0, n), make([]uint64, 0, n)
}

func (c *addressLogRows) add(chainID, address string, blockNumber uint64, logIndex uint32, topic0 string, version uint64, canon uint8) {
	c.chainID = append(c.chainID, chainID)
	c.address = append(c.address, address)
	c.blockNumber = append(c.blockNumber, blockNumber)
	c.logIndex = append(c.logIndex, logIndex)
	c.topic0 = append(c.topic0, topic0)
	c.canonical = append(c.canonical, canon)
	c.version = append(c.version, version)
}

func (c *addressLogRows) len() int { return len(c.address) }

func (c *addressLogRows) columns() []any {
	return []any{c.chainID, c.address, c.blockNumber, c.logIndex, c.topic0, c.canonical, c.version}
}
