package api

import (
	"cmp"
	"encoding/json"
	"errors"
	"math/big"
	"slices"
	"strconv"

	"golang.org/x/sync/errgroup"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/rpc"
	"github.com/tideline-dev/tideline/pkg/storage"
	"github.com/tideline-dev/tideline/pkg/tokens"
)

// The account module's token actions (tokentx, tokennfttx, token1155tx,
// tokenbalance) and stats/tokensupply, in Etherscan's fields and formats:
// numbers as decimal strings, "input" as "deprecated" (Etherscan no longer
// sends a transfer's input), the token's name, symbol and decimals from
// token_metadata ("" while not fetched or not answered). Balances and
// supply are derived from the canonical transfers (docs/querying.md), not
// asked of the contract.

// esTokenTx is a tokentx record (ERC-20).
type esTokenTx struct {
	BlockNumber       string `json:"blockNumber"`
	TimeStamp         string `json:"timeStamp"`
	Hash              string `json:"hash"`
	Nonce             string `json:"nonce"`
	BlockHash         string `json:"blockHash"`
	From              string `json:"from"`
	ContractAddress   string `json:"contractAddress"`
	To                string `json:"to"`
	Value             string `json:"value"`
	TokenName         string `json:"tokenName"`
	TokenSymbol       string `json:"tokenSymbol"`
	TokenDecimal      string `json:"tokenDecimal"`
	TransactionIndex  string `json:"transactionIndex"`
	Gas               string `json:"gas"`
	GasPrice          string `json:"gasPrice"`
	GasUsed           string `json:"gasUsed"`
	CumulativeGasUsed string `json:"cumulativeGasUsed"`
	Input             string `json:"input"`
	MethodID          string `json:"methodId"`
	FunctionName      string `json:"functionName"`
	Confirmations     string `json:"confirmations"`
}

// esNFTTx is a tokennfttx record (ERC-721).
type esNFTTx struct {
	BlockNumber       string `json:"blockNumber"`
	TimeStamp         string `json:"timeStamp"`
	Hash              string `json:"hash"`
	Nonce             string `json:"nonce"`
	BlockHash         string `json:"blockHash"`
	From              string `json:"from"`
	ContractAddress   string `json:"contractAddress"`
	To                string `json:"to"`
	TokenID           string `json:"tokenID"`
	TokenName         string `json:"tokenName"`
	TokenSymbol       string `json:"tokenSymbol"`
	TokenDecimal      string `json:"tokenDecimal"`
	TransactionIndex  string `json:"transactionIndex"`
	Gas               string `json:"gas"`
	GasPrice          string `json:"gasPrice"`
	GasUsed           string `json:"gasUsed"`
	CumulativeGasUsed string `json:"cumulativeGasUsed"`
	Input             string `json:"input"`
	MethodID          string `json:"methodId"`
	FunctionName      string `json:"functionName"`
	Confirmations     string `json:"confirmations"`
}

// es1155Tx is a token1155tx record (ERC-1155).
type es1155Tx struct {
	BlockNumber       string `json:"blockNumber"`
	TimeStamp         string `json:"timeStamp"`
	Hash              string `json:"hash"`
	Nonce             string `json:"nonce"`
	BlockHash         string `json:"blockHash"`
	TransactionIndex  string `json:"transactionIndex"`
	Gas               string `json:"gas"`
	GasPrice          string `json:"gasPrice"`
	GasUsed           string `json:"gasUsed"`
	CumulativeGasUsed string `json:"cumulativeGasUsed"`
	Input             string `json:"input"`
	MethodID          string `json:"methodId"`
	FunctionName      string `json:"functionName"`
	ContractAddress   string `json:"contractAddress"`
	From              string `json:"from"`
	To                string `json:"to"`
	TokenID           string `json:"tokenID"`
	TokenValue        string `json:"tokenValue"`
	TokenName         string `json:"tokenName"`
	TokenSymbol       string `json:"tokenSymbol"`
	Confirmations     string `json:"confirmations"`
}

// addressParam parses an optional address parameter; ok is false when the
// answer (an error) is sent.
func (q *esReq) addressParam(name string) (addr string, ok bool) {
	if !q.has(name) {
		return "", true
	}
	a, e := parseAddress(name, q.get(name))
	if e != nil {
		q.notOK("Invalid %s format: %s", name, e.Message)
		return "", false
	}
	return a, true
}

// tokenTx answers tokentx, tokennfttx and token1155tx: the transfers of
// one standard of an address and/or a token contract.
func (q *esReq) tokenTx(standard string) {
	addr, ok := q.addressParam("address")
	if !ok {
		return
	}
	contract, ok := q.addressParam("contractaddress")
	if !ok {
		return
	}
	if addr == "" && contract == "" {
		q.notOK("Missing address or contractaddress: give one, or both")
		return
	}
	l, ok := q.accountListing()
	if !ok {
		return
	}
	desc, v := l.desc, l.v
	ctx := q.r.Context()
	tq := storage.TransferQuery{Address: addr, Token: contract, Standard: standard, From: l.lo, To: l.hi, Desc: desc,
		Limit: l.limit, Offset: l.skip}
	list := q.s.store.Tokens.AddressTransferPositions
	if addr == "" {
		list = q.s.store.Tokens.TokenTransferPositions
	}
	ps, err := list(ctx, q.id, tq)
	if err != nil {
		q.failed(fromStore(err))
		return
	}
	ts, err := q.s.store.Tokens.TransfersAt(ctx, q.id, ps)
	if err != nil {
		q.failed(fromStore(err))
		return
	}
	ts = slices.DeleteFunc(ts, func(t storage.TokenTransfer) bool { return !matchesTransfer(t, tq) })
	if len(ts) == 0 {
		q.empty("No transactions found")
		return
	}
	if desc { // TransfersAt reads in ascending order
		slices.Reverse(ts)
	}
	txs, meta, ok := q.transferContext(ts)
	if !ok {
		return
	}
	out := make([]any, 0, len(ts))
	for _, t := range ts {
		tx := txs[storage.Position{Block: t.BlockNumber, Index: t.TxIndex}]
		base := esTxOf(tx, t.Timestamp, v.Watermark)
		m := meta[t.Token]
		decimals := ""
		if m.HasDecimals {
			decimals = strconv.Itoa(int(m.Decimals))
		}
		switch standard {
		case tokens.ERC20:
			out = append(out, esTokenTx{
				BlockNumber: base.BlockNumber, TimeStamp: base.TimeStamp, Hash: t.TxHash, Nonce: base.Nonce,
				BlockHash: t.BlockHash, From: t.From, ContractAddress: t.Token, To: t.To, Value: t.Amount,
				TokenName: m.Name, TokenSymbol: m.Symbol, TokenDecimal: decimals, TransactionIndex: base.TransactionIndex,
				Gas: base.Gas, GasPrice: base.GasPrice, GasUsed: base.GasUsed, CumulativeGasUsed: base.CumulativeGasUsed,
				Input: "deprecated", MethodID: base.MethodID, Confirmations: base.Confirmations,
			})
		case tokens.ERC721:
			out = append(out, esNFTTx{
				BlockNumber: base.BlockNumber, TimeStamp: base.TimeStamp, Hash: t.TxHash, Nonce: base.Nonce,
				BlockHash: t.BlockHash, From: t.From, ContractAddress: t.Token, To: t.To, TokenID: t.TokenID,
				TokenName: m.Name, TokenSymbol: m.Symbol, TokenDecimal: "0", TransactionIndex: base.TransactionIndex,
				Gas: base.Gas, GasPrice: base.GasPrice, GasUsed: base.GasUsed, CumulativeGasUsed: base.CumulativeGasUsed,
				Input: "deprecated", MethodID: base.MethodID, Confirmations: base.Confirmations,
			})
		default:
			out = append(out, es1155Tx{
				BlockNumber: base.BlockNumber, TimeStamp: base.TimeStamp, Hash: t.TxHash, Nonce: base.Nonce,
				BlockHash: t.BlockHash, TransactionIndex: base.TransactionIndex, Gas: base.Gas, GasPrice: base.GasPrice,
				GasUsed: base.GasUsed, CumulativeGasUsed: base.CumulativeGasUsed, Input: "deprecated", MethodID: base.MethodID,
				ContractAddress: t.Token, From: t.From, To: t.To, TokenID: t.TokenID, TokenValue: t.Amount,
				TokenName: m.Name, TokenSymbol: m.Symbol, Confirmations: base.Confirmations,
			})
		}
	}
	q.ok(out)
}

// transferContext reads the transactions of transfers (for nonce, gas and
// the method id: only the columns a listing takes) and their tokens'
// metadata.
func (q *esReq) transferContext(ts []storage.TokenTransfer) (map[storage.Position]chaindata.Transaction, map[string]storage.TokenMetadata, bool) {
	var ps []storage.Position
	var toks []string
	seen := map[storage.Position]bool{}
	for _, t := range ts {
		p := storage.Position{Block: t.BlockNumber, Index: t.TxIndex}
		if !seen[p] {
			seen[p] = true
			ps = append(ps, p)
		}
		if !slices.Contains(toks, t.Token) {
			toks = append(toks, t.Token)
		}
	}
	slices.SortFunc(ps, func(a, b storage.Position) int {
		return cmp.Or(cmp.Compare(a.Block, b.Block), cmp.Compare(a.Index, b.Index))
	})
	// Two independent reads: sent together, as txlist's.
	var (
		txs  []chaindata.Transaction
		meta map[string]storage.TokenMetadata
	)
	g, gctx := errgroup.WithContext(q.r.Context())
	g.Go(func() (err error) {
		txs, err = q.s.store.Tokens.TransferTxsAt(gctx, q.id, ps)
		return err
	})
	g.Go(func() (err error) {
		meta, err = q.s.store.Tokens.TokenMetadata(gctx, q.id, toks)
		return err
	})
	if err := g.Wait(); err != nil {
		q.failed(fromStore(err))
		return nil, nil, false
	}
	out := make(map[storage.Position]chaindata.Transaction, len(txs))
	for _, tx := range txs {
		out[storage.Position{Block: tx.BlockNumber, Index: tx.Index}] = tx
	}
	return out, meta, true
}

// tokenBalance answers tokenbalance: the holder's balance of an ERC-20
// derived from the canonical transfers up to the watermark ("latest").
func (q *esReq) tokenBalance() {
	contract, ok := q.requiredAddress("contractaddress")
	if !ok {
		return
	}
	addr, ok := q.requiredAddress("address")
	if !ok {
		return
	}
	if tag := q.get("tag"); tag != "" && tag != "latest" {
		q.notOK("Invalid tag: %q; only latest (the index's watermark) is served", clip(tag))
		return
	}
	bs, ok := q.derivedBalances(addr, contract)
	if !ok {
		return
	}
	sum := new(big.Int)
	for _, b := range bs {
		if b.Standard == tokens.ERC20 {
			sum.Add(sum, b.Value)
		}
	}
	q.ok(sum.String())
}

// tokenSupply answers stats/tokensupply: what was minted minus what was
// burnt (transfers from and to the zero address) up to the watermark, or
// the contract's totalSupply() as asked when first seen if no mint was
// indexed.
func (q *esReq) tokenSupply() {
	contract, ok := q.requiredAddress("contractaddress")
	if !ok {
		return
	}
	if supply, asked := q.totalSupplyAtWatermark(contract); asked {
		if supply != "" {
			q.ok(supply)
		}
		return
	}
	// No node to ask: what the index knows. The mints less the burns
	// counts transfers to the zero address as burns, which some tokens'
	// are not; the metadata's totalSupply() is as of when it was asked.
	bs, ok := q.derivedBalances(tokens.ZeroAddress, contract)
	if !ok {
		return
	}
	supply := new(big.Int)
	for _, b := range bs {
		if b.Standard == tokens.ERC20 {
			supply.Sub(supply, b.Value)
		}
	}
	if supply.Sign() > 0 {
		q.ok(supply.String())
		return
	}
	meta, err := q.s.store.Tokens.TokenMetadata(q.r.Context(), q.id, []string{contract})
	if err != nil {
		q.failed(fromStore(err))
		return
	}
	if m, ok := meta[contract]; ok && m.TotalSupply != "" {
		q.ok(m.TotalSupply)
		return
	}
	q.notOK("Token supply of %s is not known: no mint of it is indexed and its totalSupply() was not answered", contract)
}

// totalSupplySelector is totalSupply()'s selector.
const totalSupplySelector = "0x18160ddd"

// totalSupplyAtWatermark answers tokensupply as Etherscan does, with the
// contract's totalSupply() (eth_call at the watermark, so that it agrees
// with the transfers served). asked is false when the node is not asked
// here (no eth_call in api.rpc_node_methods, no node, no endpoint
// answered within half the request's time left, which stays for the
// transfers' sum); supply is "" when the answer (an error) is already
// sent.
func (q *esReq) totalSupplyAtWatermark(contract string) (supply string, asked bool) {
	v, e := q.viewOf()
	if e != nil {
		q.failed(e)
		return "", true
	}
	if !v.HasWatermark {
		return "", false
	}
	raw, err := q.askNodeLeaving("eth_call", map[string]string{"to": contract, "data": totalSupplySelector}, quantity(v.Watermark))
	var answer *rpc.AnswerError
	switch {
	case errors.As(err, &answer):
		q.notOK("Token supply of %s: its totalSupply() failed: %s", contract, q.s.redact(answer.Message))
		return "", true
	case err != nil:
		return "", false
	}
	var hex string
	n := new(big.Int)
	if json.Unmarshal(raw, &hex) != nil || len(hex) != 66 {
		q.notOK("Token supply of %s: its totalSupply() did not return a number (not an ERC-20 token?)", contract)
		return "", true
	}
	n.SetString(hex[2:], 16)
	return n.String(), true
}

// requiredAddress parses an address parameter that must be given.
func (q *esReq) requiredAddress(name string) (string, bool) {
	if !q.has(name) {
		q.notOK("Missing %s", name)
		return "", false
	}
	return q.addressParam(name)
}

// derivedBalances sums addr's balances of token over the served heights;
// a chain with pruned heights has none.
func (q *esReq) derivedBalances(addr, token string) ([]storage.Balance, bool) {
	v, ok := q.view()
	if !ok {
		return nil, false
	}
	if v.HasPruned && v.Pruned >= v.Start {
		q.notOK("Balances are sums of every transfer, and heights up to %d are pruned from this index", v.Pruned)
		return nil, false
	}
	if !v.HasWatermark {
		return nil, true
	}
	bs, err := q.s.store.Tokens.AddressBalances(q.r.Context(), q.id, addr, token, v.Lowest(), v.Watermark)
	if err != nil {
		q.failed(fromStore(err))
		return nil, false
	}
	return bs, true
}
