package api

import (
	"encoding/json"
	"fmt"
	"math/big"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/storage"
)

// The node's JSON-RPC objects, rebuilt from what is stored: a stored
// object is its columns plus its Raw (pkg/rpc/columns.go lists which keys
// the columns hold), so putting the column keys back into Raw gives the
// object the node sent, key for key (JSON key order aside). The Etherscan
// proxy module answers with these, as Etherscan passes node answers on.

// object is a JSON object under construction.
type object map[string]json.RawMessage

// objectOf parses a stored Raw (an object, or empty).
func objectOf(raw []byte) (object, error) {
	o := object{}
	if len(raw) == 0 {
		return o, nil
	}
	if err := json.Unmarshal(raw, &o); err != nil {
		return nil, fmt.Errorf("stored raw object: %w", err)
	}
	return o, nil
}

func (o object) set(key string, v any) {
	b, err := json.Marshal(v)
	if err != nil { // only strings, bools, nil and objects are set
		panic(err)
	}
	o[key] = b
}

func (o object) setRaw(key string, b json.RawMessage) { o[key] = b }

func quantity(n uint64) string { return fmt.Sprintf("0x%x", n) }

// bigQuantity turns a stored decimal wei amount into a JSON-RPC quantity.
func bigQuantity(dec string) (string, error) {
	n, ok := new(big.Int).SetString(dec, 10)
	if !ok || n.Sign() < 0 {
		return "", fmt.Errorf("stored amount %q is not a decimal number", dec)
	}
	return "0x" + n.Text(16), nil
}

// orNull is the address or JSON null for "".
func orNull(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// rpcBlock rebuilds eth_getBlockByNumber's answer: with full, the
// transaction objects; otherwise their hashes.
func rpcBlock(b chaindata.Block, txs []chaindata.Transaction, full bool) (json.RawMessage, error) {
	o, err := objectOf(b.Raw)
	if err != nil {
		return nil, err
	}
	o.set("number", quantity(b.Number))
	o.set("hash", b.Hash)
	o.set("parentHash", b.ParentHash)
	o.set("timestamp", quantity(b.Timestamp))
	if b.Miner != "" {
		o.set("miner", b.Miner)
	}
	o.set("gasUsed", quantity(b.GasUsed))
	o.set("gasLimit", quantity(b.GasLimit))
	if b.BaseFeePerGas != "" {
		q, err := bigQuantity(b.BaseFeePerGas)
		if err != nil {
			return nil, err
		}
		o.set("baseFeePerGas", q)
	}
	o.set("size", quantity(b.Size))
	list := make([]json.RawMessage, 0, len(txs))
	for _, tx := range txs {
		if !full {
			h, _ := json.Marshal(tx.Hash)
			list = append(list, h)
			continue
		}
		t, err := rpcTx(tx)
		if err != nil {
			return nil, err
		}
		list = append(list, t)
	}
	l, _ := json.Marshal(list)
	o.setRaw("transactions", l)
	return json.Marshal(o)
}

// rpcTx rebuilds eth_getTransactionByHash's answer.
func rpcTx(tx chaindata.Transaction) (json.RawMessage, error) {
	o, err := objectOf(tx.Raw)
	if err != nil {
		return nil, err
	}
	o.set("hash", tx.Hash)
	o.set("blockHash", tx.BlockHash)
	o.set("blockNumber", quantity(tx.BlockNumber))
	o.set("transactionIndex", quantity(uint64(tx.Index)))
	o.set("type", quantity(tx.Type))
	o.set("from", tx.From)
	o.set("to", orNull(tx.To))
	v, err := bigQuantity(tx.Value)
	if err != nil {
		return nil, err
	}
	o.set("value", v)
	o.set("nonce", quantity(tx.Nonce))
	o.set("gas", quantity(tx.Gas))
	if tx.GasPrice != "" {
		p, err := bigQuantity(tx.GasPrice)
		if err != nil {
			return nil, err
		}
		o.set("gasPrice", p)
	}
	return json.Marshal(o)
}

// rpcLog rebuilds a log object of a receipt or of eth_getLogs.
func rpcLog(l chaindata.Log) (json.RawMessage, error) {
	o, err := objectOf(l.Raw)
	if err != nil {
		return nil, err
	}
	o.set("blockHash", l.BlockHash)
	o.set("blockNumber", quantity(l.BlockNumber))
	o.set("transactionHash", l.TxHash)
	o.set("transactionIndex", quantity(uint64(l.TxIndex)))
	o.set("logIndex", quantity(uint64(l.LogIndex)))
	o.set("address", l.Address)
	topics := l.Topics
	if topics == nil {
		topics = []string{}
	}
	o.set("topics", topics)
	o.set("data", l.Data)
	return json.Marshal(o)
}

// rpcReceipt rebuilds eth_getTransactionReceipt's answer from the
// transaction and its logs. A logsBloom that Raw left out is the bloom of
// the logs (pkg/rpc/bloom.go), computed again here.
func rpcReceipt(tx chaindata.Transaction, logs []chaindata.Log) (json.RawMessage, error) {
	o, err := objectOf(tx.ReceiptRaw)
	if err != nil {
		return nil, err
	}
	o.set("transactionHash", tx.Hash)
	o.set("blockHash", tx.BlockHash)
	o.set("blockNumber", quantity(tx.BlockNumber))
	o.set("transactionIndex", quantity(uint64(tx.Index)))
	o.set("from", tx.From)
	o.set("to", orNull(tx.To))
	o.set("type", quantity(tx.Type))
	// A pre-Byzantium receipt has a state root and no status (stored as
	// StatusUnknown; rows written before that have 1 and the root).
	if _, root := o["root"]; !root && tx.Status != chaindata.StatusUnknown {
		o.set("status", quantity(uint64(tx.Status)))
	}
	o.set("gasUsed", quantity(tx.GasUsed))
	if tx.EffectiveGasPrice != "" {
		p, err := bigQuantity(tx.EffectiveGasPrice)
		if err != nil {
			return nil, err
		}
		o.set("effectiveGasPrice", p)
	}
	o.set("contractAddress", orNull(tx.ContractAddress))
	list := make([]json.RawMessage, 0, len(logs))
	var bloom types.Bloom
	for _, l := range logs {
		r, err := rpcLog(l)
		if err != nil {
			return nil, err
		}
		list = append(list, r)
		bloom.Add(common.FromHex(l.Address))
		for _, t := range l.Topics {
			bloom.Add(common.FromHex(t))
		}
	}
	ls, _ := json.Marshal(list)
	o.setRaw("logs", ls)
	if _, ok := o["logsBloom"]; !ok {
		o.set("logsBloom", "0x"+strings.ToLower(common.Bytes2Hex(bloom[:])))
	}
	return json.Marshal(o)
}

// ownTransactions reads a block's transactions: the canonical rows at
// its height that belong to it (the block's hash), in order.
func (c chainReq) ownTransactions(b chaindata.Block) ([]chaindata.Transaction, error) {
	txs, err := c.s.store.Chain.BlockTransactions(c.r.Context(), c.id, b.Number, 0, int(b.TxCount)+1)
	if err != nil {
		return nil, err
	}
	own := txs[:0]
	for _, tx := range txs {
		if tx.BlockHash == b.Hash {
			own = append(own, tx)
		}
	}
	return own, nil
}

// ownLogs reads a transaction's logs (a receipt's), those of its block.
func (c chainReq) ownLogs(tx chaindata.Transaction) ([]chaindata.Log, error) {
	logs, err := c.s.store.Chain.TxLogs(c.r.Context(), c.id, storage.Position{Block: tx.BlockNumber, Index: tx.Index})
	if err != nil {
		return nil, err
	}
	own := logs[:0]
	for _, l := range logs {
		if l.BlockHash == tx.BlockHash && l.TxHash == tx.Hash {
			own = append(own, l)
		}
	}
	return own, nil
}
