package stream

import (
	"encoding/json"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/storage"
)

// The JSON records a block_added event carries, and that the query API's
// REST routes answer with too (docs/openapi.json has their schemas): one
// definition, so that an event's rows and a route's rows never differ.
// Heights, gas and counts are JSON numbers; wei amounts are decimal
// strings (they overflow 64 bits); hashes and addresses are lower-case 0x
// hex. `raw` is the rest of the node's object: every field tideline has no
// column for, exactly as the node sent it.

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

// TokenTransfer is one movement of a token. Amounts and ids are decimal
// strings (uint256).
type TokenTransfer struct {
	BlockNumber uint64 `json:"block_number"`
	BlockHash   string `json:"block_hash"`
	Timestamp   uint64 `json:"timestamp"`
	TxHash      string `json:"tx_hash"`
	TxIndex     uint32 `json:"tx_index"`
	LogIndex    uint32 `json:"log_index"`
	BatchIndex  uint32 `json:"batch_index"`
	Token       string `json:"token"`
	Standard    string `json:"standard"`
	Operator    string `json:"operator"`
	From        string `json:"from"`
	To          string `json:"to"`
	// TokenID is null for ERC-20.
	TokenID *string `json:"token_id"`
	Amount  string  `json:"amount"`
}

// Frame is one call frame of a transaction.
type Frame struct {
	Index        uint32   `json:"index"`
	TraceAddress []uint32 `json:"trace_address"`
	Depth        int      `json:"depth"`
	Type         string   `json:"type"`
	From         string   `json:"from"`
	To           *string  `json:"to"` // null for a creation that failed before it had an address
	Value        string   `json:"value"`
	Gas          uint64   `json:"gas"`
	GasUsed      uint64   `json:"gas_used"`
	Input        string   `json:"input"`
	Output       string   `json:"output"`
	Error        *string  `json:"error"`
	RevertReason *string  `json:"revert_reason"`
	Reverted     bool     `json:"reverted"`
	Subtraces    uint32   `json:"subtraces"`
}

// InternalTx is an inner frame with the transaction it belongs to.
type InternalTx struct {
	BlockNumber uint64 `json:"block_number"`
	BlockHash   string `json:"block_hash"`
	TxHash      string `json:"tx_hash"`
	TxIndex     uint32 `json:"tx_index"`
	Frame
}

// RawObject is a stored Raw as a JSON object ({} when empty).
func RawObject(b []byte) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("{}")
	}
	return json.RawMessage(b)
}

// Optional is nil for "" (a value the node did not send).
func Optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// TransactionOf is the record of a stored transaction.
func TransactionOf(tx chaindata.Transaction) Transaction {
	return Transaction{
		BlockNumber: tx.BlockNumber, BlockHash: tx.BlockHash, TxIndex: tx.Index, Hash: tx.Hash, Type: tx.Type,
		From: tx.From, To: Optional(tx.To), Value: tx.Value, Nonce: tx.Nonce, Gas: tx.Gas,
		GasPrice: Optional(tx.GasPrice), Status: ReceiptStatus(tx), GasUsed: tx.GasUsed,
		EffectiveGasPrice: Optional(tx.EffectiveGasPrice), ContractAddress: Optional(tx.ContractAddress),
		LogCount: tx.LogCount, Raw: RawObject(tx.Raw), ReceiptRaw: RawObject(tx.ReceiptRaw),
	}
}

// ReceiptStatus is a transaction's receipt status, nil when the receipt
// has none (before Byzantium): stored as chaindata.StatusUnknown, or, in rows
// written before that value existed, as 1 with the receipt's state root
// kept in receipt_raw.
func ReceiptStatus(tx chaindata.Transaction) *uint8 {
	if tx.Status == chaindata.StatusUnknown {
		return nil
	}
	var o map[string]json.RawMessage
	if len(tx.ReceiptRaw) > 0 && json.Unmarshal(tx.ReceiptRaw, &o) == nil {
		if _, root := o["root"]; root {
			return nil
		}
	}
	s := tx.Status
	return &s
}

// LogOf is the record of a stored log.
func LogOf(l chaindata.Log) Log {
	topics := l.Topics
	if topics == nil {
		topics = []string{}
	}
	return Log{
		BlockNumber: l.BlockNumber, BlockHash: l.BlockHash, TxHash: l.TxHash, TxIndex: l.TxIndex,
		LogIndex: l.LogIndex, Address: l.Address, Topics: topics, Data: l.Data, Raw: RawObject(l.Raw),
	}
}

// TransferOf is the record of a stored token transfer.
func TransferOf(t storage.TokenTransfer) TokenTransfer {
	return TokenTransfer{
		BlockNumber: t.BlockNumber, BlockHash: t.BlockHash, Timestamp: t.Timestamp, TxHash: t.TxHash, TxIndex: t.TxIndex,
		LogIndex: t.LogIndex, BatchIndex: t.BatchIndex, Token: t.Token, Standard: t.Standard, Operator: t.Operator,
		From: t.From, To: t.To, TokenID: Optional(t.TokenID), Amount: t.Amount,
	}
}

// FrameOf is the record of a stored call frame.
func FrameOf(t chaindata.Trace) Frame {
	addr := t.Address
	if addr == nil {
		addr = []uint32{}
	}
	return Frame{
		Index: t.Index, TraceAddress: addr, Depth: t.Depth(), Type: string(t.Type), From: t.From, To: Optional(t.To),
		Value: t.Value, Gas: t.Gas, GasUsed: t.GasUsed, Input: t.Input, Output: t.Output,
		Error: Optional(t.Error), RevertReason: Optional(t.RevertReason), Reverted: t.Reverted, Subtraces: t.Subtraces,
	}
}

// InternalTxOf is the record of a stored inner frame with its transaction.
func InternalTxOf(t chaindata.Trace) InternalTx {
	return InternalTx{BlockNumber: t.BlockNumber, BlockHash: t.BlockHash, TxHash: t.TxHash, TxIndex: t.TxIndex, Frame: FrameOf(t)}
}
