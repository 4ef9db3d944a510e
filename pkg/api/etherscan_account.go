package api

import (
	"encoding/json"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/storage"
	"github.com/tideline-dev/tideline/pkg/stream"
)

// The account module: account/txlist, an address's transactions with
// numbers as decimal strings, as Etherscan gives them.

// esTx is a transaction of account/txlist, Etherscan's fields and formats.
type esTx struct {
	BlockNumber       string `json:"blockNumber"`
	TimeStamp         string `json:"timeStamp"`
	Hash              string `json:"hash"`
	Nonce             string `json:"nonce"`
	BlockHash         string `json:"blockHash"`
	TransactionIndex  string `json:"transactionIndex"`
	From              string `json:"from"`
	To                string `json:"to"`
	Value             string `json:"value"`
	Gas               string `json:"gas"`
	GasPrice          string `json:"gasPrice"`
	IsError           string `json:"isError"`
	TxReceiptStatus   string `json:"txreceipt_status"`
	Input             string `json:"input"`
	ContractAddress   string `json:"contractAddress"`
	CumulativeGasUsed string `json:"cumulativeGasUsed"`
	GasUsed           string `json:"gasUsed"`
	Confirmations     string `json:"confirmations"`
	MethodID          string `json:"methodId"`
	FunctionName      string `json:"functionName"`
}

func (q *esReq) txlist() {
	addr := q.get("address")
	if _, e := parseAddress("address", addr); e != nil {
		q.notOK("Invalid address format: %s", e.Message)
		return
	}
	addr = strings.ToLower(addr)
	l, ok := q.accountListing() // etherscan_tokens.go
	if !ok {
		return
	}
	desc, limit, skip, v, lo, hi := l.desc, l.limit, l.skip, l.v, l.lo, l.hi
	ctx := q.r.Context()
	ps, err := q.s.store.Chain.AddressTxPositions(ctx, q.id, storage.AddressTxQuery{
		Address: addr, From: lo, To: hi, Desc: desc, Limit: limit, Offset: skip,
	})
	if err != nil {
		q.failed(fromStore(err))
		return
	}
	// The transactions and their blocks' times are two reads of the same
	// positions: sent together, an answer waits for the slower one only.
	var (
		txs   []chaindata.Transaction
		times map[uint64]uint64
	)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		txs, err = q.s.store.Chain.TransactionsAt(gctx, q.id, ps)
		return err
	})
	g.Go(func() (err error) {
		times, err = q.s.blockTimes(gctx, q.id, heightsOfPositions(ps))
		return err
	})
	if err := g.Wait(); err != nil {
		q.failed(fromStore(err))
		return
	}
	out := make([]esTx, 0, len(txs))
	for _, tx := range txs {
		if tx.From != addr && tx.To != addr && tx.ContractAddress != addr {
			continue // a look-up row that no longer matches its transaction
		}
		out = append(out, esTxOf(tx, times[tx.BlockNumber], v.Watermark))
	}
	if desc { // TransactionsAt reads in ascending order
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	}
	if len(out) == 0 {
		q.empty("No transactions found")
		return
	}
	q.ok(out)
}

// heightsOfPositions lists the distinct heights of positions.
func heightsOfPositions(ps []storage.Position) []uint64 {
	hs := make([]uint64, 0, len(ps))
	for _, p := range ps {
		hs = append(hs, p.Block)
	}
	slices.Sort(hs)
	return slices.Compact(hs)
}

// rawString reads a string field of a stored Raw object ("" if absent).
func rawString(raw []byte, key string) string {
	o, err := objectOf(raw)
	if err != nil {
		return ""
	}
	var s string
	if json.Unmarshal(o[key], &s) != nil {
		return ""
	}
	return s
}

// hexToDecimal turns a JSON-RPC quantity into a decimal string ("" if it
// is not one).
func hexToDecimal(h string) string {
	if len(h) < 3 || h[:2] != "0x" {
		return ""
	}
	n, ok := new(big.Int).SetString(h[2:], 16)
	if !ok {
		return ""
	}
	return n.String()
}

func esTxOf(tx chaindata.Transaction, ts, watermark uint64) esTx {
	input := rawString(tx.Raw, "input")
	if input == "" {
		input = "0x"
	}
	method := "0x"
	if len(input) >= 10 {
		method = input[:10]
	}
	gasPrice := tx.EffectiveGasPrice
	if gasPrice == "" {
		gasPrice = tx.GasPrice
	}
	isError, status := "0", "1"
	switch s := stream.ReceiptStatus(tx); {
	case s == nil:
		status = "" // pre-Byzantium: the receipt has no status
	case *s == chaindata.StatusFailure:
		isError, status = "1", "0"
	}
	u := func(n uint64) string { return strconv.FormatUint(n, 10) }
	return esTx{
		BlockNumber: u(tx.BlockNumber), TimeStamp: u(ts), Hash: tx.Hash, Nonce: u(tx.Nonce),
		BlockHash: tx.BlockHash, TransactionIndex: u(uint64(tx.Index)), From: tx.From, To: tx.To,
		Value: tx.Value, Gas: u(tx.Gas), GasPrice: gasPrice, IsError: isError, TxReceiptStatus: status,
		Input: input, ContractAddress: tx.ContractAddress,
		CumulativeGasUsed: hexToDecimal(rawString(tx.ReceiptRaw, "cumulativeGasUsed")),
		GasUsed:           u(tx.GasUsed), Confirmations: u(watermark - tx.BlockNumber + 1),
		MethodID: method, FunctionName: "",
	}
}
