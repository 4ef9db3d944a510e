package storage

import "github.com/tideline-dev/tideline/pkg/tokens"

// The token transfer tables' rows (migrations 0044-0046), built column by
// column like rows.go's: token_transfers, keyed by position, and its two
// look-up tables, keyed by token and by address.

const (
	tableTokenTransfers  = "token_transfers"
	tableTransfersByTok  = "token_transfers_by_token"
	tableAddressTransfer = "address_transfers"
)

// Column lists of the inserts, in the order of columns() below.
var (
	tokenTransferColumns = []string{
		"chain_id", "block_number", "block_hash", "timestamp", "tx_hash", "tx_index", "log_index", "batch_index",
		"token_address", "standard", "operator", "from_address", "to_address", "token_id", "amount",
		"amount_w0", "amount_w1", "amount_w2", "amount_w3", "is_canonical", "version",
	}
	transfersByTokenColumns = []string{
		"chain_id", "token_address", "block_number", "log_index", "batch_index", "standard",
		"from_address", "to_address", "token_id", "amount_w0", "amount_w1", "amount_w2", "amount_w3",
		"is_canonical", "version",
	}
	addressTransferColumns = []string{
		"chain_id", "address", "block_number", "log_index", "batch_index", "token_address", "standard",
		"token_id", "is_from", "is_to", "amount_w0", "amount_w1", "amount_w2", "amount_w3",
		"is_canonical", "version",
	}
)

// words holds the four amount columns.
type words struct {
	w0, w1, w2, w3 []uint64
}

func (w *words) grow(n int) {
	w.w0, w.w1, w.w2, w.w3 = make([]uint64, 0, n), make([]uint64, 0, n), make([]uint64, 0, n), make([]uint64, 0, n)
}

func (w *words) add(v [4]uint64) {
	w.w0 = append(w.w0, v[0])
	w.w1 = append(w.w1, v[1])
	w.w2 = append(w.w2, v[2])
	w.w3 = append(w.w3, v[3])
}

// tokenTransferRows holds rows of tokenTransferColumns.
type tokenTransferRows struct {
	chainID, blockHash, txHash              []string
	blockNumber, version                    []uint64
	timestamp                               []int64
	txIndex, logIndex, batchIndex           []uint32
	token, standard, operator, from, to, id []string
	amount                                  []string
	amountWords                             words
	canonical                               []uint8
}

func (c *tokenTransferRows) grow(n int) {
	c.chainID, c.blockNumber, c.blockHash, c.timestamp = make([]string, 0, n), make([]uint64, 0, n), make([]string, 0, n), make([]int64, 0, n)
	c.txHash, c.txIndex, c.logIndex, c.batchIndex = make([]string, 0, n), make([]uint32, 0, n), make([]uint32, 0, n), make([]uint32, 0, n)
	c.token, c.standard, c.operator, c.from = make([]string, 0, n), make([]string, 0, n), make([]string, 0, n), make([]string, 0, n)
	c.to, c.id, c.amount = make([]string, 0, n), make([]string, 0, n), make([]string, 0, n)
	c.amountWords.grow(n)
	c.canonical, c.version = make([]uint8, 0, n), make([]uint64, 0, n)
}

func (c *tokenTransferRows) add(chainID string, t *tokens.Transfer, timestamp int64, version uint64, canon uint8) {
	c.chainID = append(c.chainID, chainID)
	c.blockNumber = append(c.blockNumber, t.BlockNumber)
	c.blockHash = append(c.blockHash, t.BlockHash)
	c.timestamp = append(c.timestamp, timestamp)
	c.txHash = append(c.txHash, t.TxHash)
	c.txIndex = append(c.txIndex, t.TxIndex)
	c.logIndex = append(c.logIndex, t.LogIndex)
	c.batchIndex = append(c.batchIndex, t.BatchIndex)
	c.token = append(c.token, t.Token)
	c.standard = append(c.standard, t.Standard)
	c.operator = append(c.operator, t.Operator)
	c.from = append(c.from, t.From)
	c.to = append(c.to, t.To)
	c.id = append(c.id, t.TokenID)
	c.amount = append(c.amount, t.Amount)
	c.amountWords.add(t.Words)
	c.canonical = append(c.canonical, canon)
	c.version = append(c.version, version)
}

func (c *tokenTransferRows) len() int { return len(c.blockNumber) }

func (c *tokenTransferRows) columns() []any {
	return []any{
		c.chainID, c.blockNumber, c.blockHash, c.timestamp, c.txHash, c.txIndex, c.logIndex, c.batchIndex,
		c.token, c.standard, c.operator, c.from, c.to, c.id, c.amount,
		c.amountWords.w0, c.amountWords.w1, c.amountWords.w2, c.amountWords.w3, c.canonical, c.version,
	}
}

// transfersByTokenRows holds rows of transfersByTokenColumns.
type transfersByTokenRows struct {
	chainID, token, standard, from, to, id []string
	blockNumber, version                   []uint64
	logIndex, batchIndex                   []uint32
	amountWords                            words
	canonical                              []uint8
}

func (c *transfersByTokenRows) grow(n int) {
	c.chainID, c.token, c.blockNumber, c.logIndex = make([]string, 0, n), make([]string, 0, n), make([]uint64, 0, n), make([]uint32, 0, n)
	c.batchIndex, c.standard, c.from, c.to = make([]uint32, 0, n), make([]string, 0, n), make([]string, 0, n), make([]string, 0, n)
	c.id, c.canonical, c.version = make([]string, 0, n), make([]uint8, 0, n), make([]uint64, 0, n)
	c.amountWords.grow(n)
}

func (c *transfersByTokenRows) add(chainID string, t *tokens.Transfer, version uint64, canon uint8) {
	c.chainID = append(c.chainID, chainID)
	c.token = append(c.token, t.Token)
	c.blockNumber = append(c.blockNumber, t.BlockNumber)
	c.logIndex = append(c.logIndex, t.LogIndex)
	c.batchIndex = append(c.batchIndex, t.BatchIndex)
	c.standard = append(c.standard, t.Standard)
	c.from = append(c.from, t.From)
	c.to = append(c.to, t.To)
	c.id = append(c.id, t.TokenID)
	c.amountWords.add(t.Words)
	c.canonical = append(c.canonical, canon)
	c.version = append(c.version, version)
}

func (c *transfersByTokenRows) len() int { return len(c.token) }

func (c *transfersByTokenRows) columns() []any {
	return []any{
		c.chainID, c.token, c.blockNumber, c.logIndex, c.batchIndex, c.standard,
		c.from, c.to, c.id, c.amountWords.w0, c.amountWords.w1, c.amountWords.w2, c.amountWords.w3,
		c.canonical, c.version,
	}
}

// sort puts the rows in key order (token, position), as lookupRows.sort
// does for the same reason: the server then only checks the order.
func (c *transfersByTokenRows) sort() {
	inStringKeyOrder(c.token, func(i, j int) int {
		return compareTransferPosition(c.blockNumber[i], c.blockNumber[j], c.logIndex[i], c.logIndex[j], c.batchIndex[i], c.batchIndex[j])
	}, c.columns())
}

// addressTransferRows holds rows of addressTransferColumns.
type addressTransferRows struct {
	chainID, address, token, standard, id []string
	blockNumber, version                  []uint64
	logIndex, batchIndex                  []uint32
	isFrom, isTo, canonical               []uint8
	amountWords                           words
}

func (c *addressTransferRows) grow(n int) {
	c.chainID, c.address, c.blockNumber, c.logIndex = make([]string, 0, n), make([]string, 0, n), make([]uint64, 0, n), make([]uint32, 0, n)
	c.batchIndex, c.token, c.standard, c.id = make([]uint32, 0, n), make([]string, 0, n), make([]string, 0, n), make([]string, 0, n)
	c.isFrom, c.isTo, c.canonical, c.version = make([]uint8, 0, n), make([]uint8, 0, n), make([]uint8, 0, n), make([]uint64, 0, n)
	c.amountWords.grow(n)
}

// add lists transfer t under address, with the flags of what address is
// to it.
func (c *addressTransferRows) add(chainID, address string, t *tokens.Transfer, version uint64, canon uint8) {
	c.chainID = append(c.chainID, chainID)
	c.address = append(c.address, address)
	c.blockNumber = append(c.blockNumber, t.BlockNumber)
	c.logIndex = append(c.logIndex, t.LogIndex)
	c.batchIndex = append(c.batchIndex, t.BatchIndex)
	c.token = append(c.token, t.Token)
	c.standard = append(c.standard, t.Standard)
	c.id = append(c.id, t.TokenID)
	c.isFrom = append(c.isFrom, flag(address == t.From))
	c.isTo = append(c.isTo, flag(address == t.To))
	c.amountWords.add(t.Words)
	c.canonical = append(c.canonical, canon)
	c.version = append(c.version, version)
}

func (c *addressTransferRows) len() int { return len(c.address) }

func (c *addressTransferRows) columns() []any {
	return []any{
		c.chainID, c.address, c.blockNumber, c.logIndex, c.batchIndex, c.token, c.standard,
		c.id, c.isFrom, c.isTo, c.amountWords.w0, c.amountWords.w1, c.amountWords.w2, c.amountWords.w3,
		c.canonical, c.version,
	}
}

func (c *addressTransferRows) sort() {
	inStringKeyOrder(c.address, func(i, j int) int {
		return compareTransferPosition(c.blockNumber[i], c.blockNumber[j], c.logIndex[i], c.logIndex[j], c.batchIndex[i], c.batchIndex[j])
	}, c.columns())
}

// compareTransferPosition orders transfers by height, log, then batch
// index.
func compareTransferPosition(n1, n2 uint64, l1, l2, b1, b2 uint32) int {
	if c := comparePosition(n1, n2, l1, l2); c != 0 {
		return c
	}
	return comparePosition(0, 0, b1, b2)
}
