// Package chaindata is the chain's data model: the artifacts the RPC adapters decode and
// storage writes (Block, Transaction, Log, BlockData, StoredBlock) and
// HeightRange with its arithmetic. It is a leaf: it imports nothing of
// tideline, so every layer (rpc, storage, temporal, indexer) may use it.
package chaindata

// Block is one block header as stored. Hex values (hashes, addresses) are
// 0x-prefixed lower case; big integers (wei amounts) are base-10 strings so
// that nothing is lost in a 64-bit column. The Raw fields of this package
// hold what the other fields do not: a node's object is its fields plus its
// Raw (pkg/rpc/columns.go says which keys are left out).
type Block struct {
	Number        uint64
	Hash          string
	ParentHash    string
	Timestamp     uint64 // unix seconds; consecutive blocks may share one
	Miner         string
	GasUsed       uint64
	GasLimit      uint64
	BaseFeePerGas string // decimal wei, "" before London
	Size          uint64
	TxCount       uint32
	LogCount      uint32
	// Raw is the rest of the node's block object: every key without a
	// field here (roots, bloom, extra data, withdrawals…). The
	// transactions are stored apart.
	Raw []byte
}

// Transaction is one transaction joined with its receipt.
type Transaction struct {
	BlockNumber       uint64
	BlockHash         string
	Index             uint32
	Hash              string
	Type              uint64 // kept even when no library knows the type
	From              string
	To                string // "" for contract creation
	Value             string // decimal wei
	Nonce             uint64
	Gas               uint64
	GasPrice          string // decimal wei, "" if the node omits it
	Status            uint8  // receipt status: StatusSuccess, StatusFailure, or StatusUnknown before Byzantium
	GasUsed           uint64 // from the receipt
	EffectiveGasPrice string // decimal wei from the receipt, "" if absent
	ContractAddress   string // from the receipt, "" if none
	LogCount          uint32
	Raw               []byte // the rest of the node's transaction object (calldata, signature…)
	ReceiptRaw        []byte // the rest of the receipt (cumulative gas, a bloom its logs do not make…)
}

// Log is one event log emitted in a block.
type Log struct {
	BlockNumber uint64
	BlockHash   string
	TxHash      string
	TxIndex     uint32
	LogIndex    uint32 // position in the block
	Address     string
	Topics      []string
	Data        string // 0x-hex
	Raw         []byte // the rest of the node's log object ("removed", unknown keys)
}

// Receipt statuses. A receipt from before Byzantium (EIP-658) carries a
// state root instead of a status: whether the transaction failed is not
// recorded, so it is stored as StatusUnknown, which a UInt8 column holds
// on every ClickHouse version (no Nullable needed), and answered as the
// node does, with no status.
const (
	StatusFailure uint8 = 0
	StatusSuccess uint8 = 1
	StatusUnknown uint8 = 2
)

// BlockData is everything indexed for one height; it is written as a unit.
type BlockData struct {
	Block        Block
	Transactions []Transaction
	Logs         []Log
	// Traces are the call frames of every transaction, by transaction
	// and frame index, when Traced: a chain with tracing on writes a
	// height only with them (trace.go).
	Traces []Trace
	Traced bool
}

// StoredBlock is what the database holds for one height: the newest block
// row's hash and parent hash, and whether that row is canonical (false for
// a tombstone: the node no longer had the block when it was last checked).
type StoredBlock struct {
	Number     uint64
	Hash       string
	ParentHash string
	Canonical  bool
}
