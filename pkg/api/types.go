package api

import (
	"encoding/json"

	"github.com/tideline-dev/tideline/pkg/chain"
)

// The REST answers' objects (docs/openapi.json has their schemas). Heights,
// gas and counts are JSON numbers; wei amounts are decimal strings (they
// overflow 64 bits); hashes and addresses are lower-case 0x hex. `raw` is
// the rest of the node's object: every field tideline has no column for,
// exactly as the node sent it.

// Block is a block header as indexed.
type Block struct {
	Number        uint64          `json:"number"`
	Hash          string          `json:"hash"`
	ParentHash    string          `json:"parent_hash"`
	Timestamp     uint64          `json:"timestamp"`
	Miner         string          `json:"miner"`
	GasUsed       uint64          `json:"gas_used"`
	GasLimit      uint64          `json:"gas_limit"`
	BaseFeePerGas *string         `json:"base_fee_per_gas"` // null before London
	Size          uint64          `json:"size"`
	TxCount       uint32          `json:"tx_count"`
	LogCount      uint32          `json:"log_count"`
	Raw           json.RawMessage `json:"raw"`
}

// Transaction is a transaction with its receipt's fields.
type Transaction struct {
	BlockNumber       uint64          `json:"block_number"`
	BlockHash         string          `json:"block_hash"`
	TxIndex           uint32          `json:"tx_index"`
	Hash              string          `json:"hash"`
	Type              uint64          `json:"type"`
	From              string          `json:"from"`
	To                *string         `json:"to"` // null for a contract creation
	Value             string          `json:"value"`
	Nonce             uint64          `json:"nonce"`
	Gas               uint64          `json:"gas"`
	GasPrice          *string         `json:"gas_price"`
	Status            *uint8          `json:"status"` // null before Byzantium: not recorded
	GasUsed           uint64          `json:"gas_used"`
	EffectiveGasPrice *string         `json:"effective_gas_price"`
	ContractAddress   *string         `json:"contract_address"`
	LogCount          uint32          `json:"log_count"`
	Raw               json.RawMessage `json:"raw"`
	ReceiptRaw        json.RawMessage `json:"receipt_raw"`
}

// Log is an event log.
type Log struct {
	BlockNumber uint64          `json:"block_number"`
	BlockHash   string          `json:"block_hash"`
	TxHash      string          `json:"tx_hash"`
	TxIndex     uint32          `json:"tx_index"`
	LogIndex    uint32          `json:"log_index"`
	Address     string          `json:"address"`
	Topics      []string        `json:"topics"`
	Data        string          `json:"data"`
	Raw         json.RawMessage `json:"raw"`
}

// page is a listing: the items, the cursor of the next page (null at the
// end), and the watermark the answer was cut at.
type page[T any] struct {
	Items      []T     `json:"items"`
	NextCursor *string `json:"next_cursor"`
	Watermark  uint64  `json:"watermark"`
}

// rawObject is a stored Raw as a JSON object ({} when empty).
func rawObject(b []byte) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("{}")
	}
	return json.RawMessage(b)
}

// optional is nil for "" (a value the node did not send).
func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func blockOf(b chain.Block) Block {
	return Block{
		Number: b.Number, Hash: b.Hash, ParentHash: b.ParentHash, Timestamp: b.Timestamp, Miner: b.Miner,
		GasUsed: b.GasUsed, GasLimit: b.GasLimit, BaseFeePerGas: optional(b.BaseFeePerGas), Size: b.Size,
		TxCount: b.TxCount, LogCount: b.LogCount, Raw: rawObject(b.Raw),
	}
}

func transactionOf(tx chain.Transaction) Transaction {
	return Transaction{
		BlockNumber: tx.BlockNumber, BlockHash: tx.BlockHash, TxIndex: tx.Index, Hash: tx.Hash, Type: tx.Type,
		From: tx.From, To: optional(tx.To), Value: tx.Value, Nonce: tx.Nonce, Gas: tx.Gas,
		GasPrice: optional(tx.GasPrice), Status: receiptStatus(tx), GasUsed: tx.GasUsed,
		EffectiveGasPrice: optional(tx.EffectiveGasPrice), ContractAddress: optional(tx.ContractAddress),
		LogCount: tx.LogCount, Raw: rawObject(tx.Raw), ReceiptRaw: rawObject(tx.ReceiptRaw),
	}
}

func logOf(l chain.Log) Log {
	topics := l.Topics
	if topics == nil {
		topics = []string{}
	}
	return Log{
		BlockNumber: l.BlockNumber, BlockHash: l.BlockHash, TxHash: l.TxHash, TxIndex: l.TxIndex,
		LogIndex: l.LogIndex, Address: l.Address, Topics: topics, Data: l.Data, Raw: rawObject(l.Raw),
	}
}

// receiptStatus is a transaction's receipt status, nil when the receipt
// has none (before Byzantium): stored as chain.StatusUnknown, or, in rows
// written before that value existed, as 1 with the receipt's state root
// kept in receipt_raw.
func receiptStatus(tx chain.Transaction) *uint8 {
	if tx.Status == chain.StatusUnknown {
		return nil
	}
	if o, err := objectOf(tx.ReceiptRaw); err == nil {
		if _, root := o["root"]; root {
			return nil
		}
	}
	s := tx.Status
	return &s
}
