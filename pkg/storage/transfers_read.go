package storage

import (
	"context"
	"fmt"
	"math/big"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/tokens"
)

// The query API's reads of token transfers and balances (statements in
// transfers_queries.go). The look-up tables give positions; the rows are
// read from token_transfers at them, and the caller checks each against
// what it searched by (the look-up row of a failed write may point at a
// row that was never stored: README, "Look-up tables").

// TransferPosition is where a transfer sits: its height, its log's index
// in the block and its index in an ERC-1155 batch (0 otherwise).
type TransferPosition struct {
	Block      uint64
	Log, Batch uint32
}

// TokenTransfer is a stored transfer with its block's time.
type TokenTransfer struct {
	tokens.Transfer
	Timestamp uint64
}

// TransferQuery selects transfers of one token or one address.
type TransferQuery struct {
	// Token is the token (TokenTransferPositions), or for
	// AddressTransferPositions an optional filter.
	Token string
	// Address is the address (AddressTransferPositions): as sender or
	// recipient.
	Address  string
	Standard string // tokens.ERC20, ERC721, ERC1155; "" any
	From, To uint64 // heights, inclusive
	Desc     bool   // newest first
	After    *TransferPosition
	Limit    int
	Offset   int
}

// TokenTransferPositions lists the positions of a token's transfers from
// token_transfers_by_token.
func (c *TokenReader) TokenTransferPositions(ctx context.Context, chainID string, q TransferQuery) ([]TransferPosition, error) {
	return c.transferPositions(ctx, fmt.Sprintf("reading %s of chain %q", tableTransfersByTok, chainID),
		transferPositionsQuery{chainID: chainID, byToken: true, key: q.Token, standard: q.Standard, from: q.From, to: q.To,
			desc: q.Desc, after: q.After, limit: q.Limit, offset: q.Offset})
}

// AddressTransferPositions lists the positions of an address's transfers
// (sent or received) from address_transfers.
func (c *TokenReader) AddressTransferPositions(ctx context.Context, chainID string, q TransferQuery) ([]TransferPosition, error) {
	return c.transferPositions(ctx, fmt.Sprintf("reading %s of chain %q", tableAddressTransfer, chainID),
		transferPositionsQuery{chainID: chainID, key: q.Address, token: q.Token, standard: q.Standard, from: q.From, to: q.To,
			desc: q.Desc, after: q.After, limit: q.Limit, offset: q.Offset})
}

func (c *db) transferPositions(ctx context.Context, what string, s statement) ([]TransferPosition, error) {
	var out []TransferPosition
	err := c.query(ctx, what, s, func(r driver.Rows) error {
		var p TransferPosition
		err := r.Scan(&p.Block, &p.Log, &p.Batch)
		out = append(out, p)
		return err
	})
	return out, err
}

// TransfersAt returns the canonical transfers at the positions, ascending;
// a position without one is left out.
func (c *TokenReader) TransfersAt(ctx context.Context, chainID string, ps []TransferPosition) ([]TokenTransfer, error) {
	if len(ps) == 0 {
		return nil, nil
	}
	var out []TokenTransfer
	err := c.query(ctx, fmt.Sprintf("reading %s of chain %q at %d positions", tableTokenTransfers, chainID, len(ps)),
		transfersAtQuery{chainID, ps}, func(r driver.Rows) error {
			t, err := scanTransfer(r)
			out = append(out, t)
			return err
		})
	return out, err
}

// TransferTxsAt is Reader.TransactionsAt with only what a transfer
// listing takes from a transaction (txTransferColumns): BlockHash, Hash,
// Type, From, To, Value, Status, ContractAddress and LogCount are left zero
// (the transfer has its own hashes and addresses). A listing's positions
// are scattered, where every column named is one more random read a
// position: half the columns, half the reads.
func (c *TokenReader) TransferTxsAt(ctx context.Context, chainID string, ps []Position) ([]chaindata.Transaction, error) {
	if len(ps) == 0 {
		return nil, nil
	}
	return c.transactions(ctx, fmt.Sprintf("reading %s of transfers of chain %q at %d positions", tableTransactions, chainID, len(ps)),
		transactionsAtQuery{chainID, ps, txTransferColumns})
}

// scanTransfer reads a row of transferReadColumns.
func scanTransfer(r driver.Rows) (TokenTransfer, error) {
	var t TokenTransfer
	var ts uint32
	w := &t.Words
	err := r.Scan(&t.BlockNumber, &t.BlockHash, &ts, &t.TxHash, &t.TxIndex, &t.LogIndex, &t.BatchIndex,
		&t.Token, &t.Standard, &t.Operator, &t.From, &t.To, &t.TokenID, &t.Amount, &w[0], &w[1], &w[2], &w[3])
	t.Timestamp = uint64(ts)
	return t, err
}

// Balance is what a holder has of a token (of one id, for ERC-1155): the
// net of the canonical transfers counted, which differs from the
// contract's balanceOf for tokens whose balances change without a
// Transfer event (rebasing, fee-on-transfer, airdrops by storage writes).
type Balance struct {
	Holder   string
	Token    string
	Standard string
	TokenID  string // ERC-1155's id; "" otherwise
	Value    *big.Int
}

// TokenHolders returns a token's holders with a positive balance, the
// largest first, at most limit; tokenID "" ranks every ERC-1155 id.
func (c *TokenReader) TokenHolders(ctx context.Context, chainID, token, tokenID string, from, to uint64, limit int) ([]Balance, error) {
	var out []Balance
	err := c.query(ctx, fmt.Sprintf("summing %s of token %s of chain %q", tableTransfersByTok, token, chainID),
		tokenHoldersQuery{chainID, token, tokenID, from, to, limit}, func(r driver.Rows) error {
			b := Balance{Token: token}
			var s [8]int64
			var d [8]int64
			if err := r.Scan(&b.Holder, &b.Standard, &b.TokenID, &s[0], &s[1], &s[2], &s[3], &s[4], &s[5], &s[6], &s[7],
				&d[0], &d[1], &d[2], &d[3], &d[4], &d[5], &d[6], &d[7]); err != nil {
				return err
			}
			b.Value = fromHalves(s)
			out = append(out, b)
			return nil
		})
	return out, err
}

// AddressBalances returns an address's balances per token (and ERC-1155
// id), zero ones included, ordered by token; only token's when it is set.
func (c *TokenReader) AddressBalances(ctx context.Context, chainID, address, token string, from, to uint64) ([]Balance, error) {
	var out []Balance
	err := c.query(ctx, fmt.Sprintf("summing %s of %s of chain %q", tableAddressTransfer, address, chainID),
		addressBalancesQuery{chainID, address, token, from, to}, func(r driver.Rows) error {
			b := Balance{Holder: address}
			var s [8]int64
			if err := r.Scan(&b.Token, &b.Standard, &b.TokenID, &s[0], &s[1], &s[2], &s[3], &s[4], &s[5], &s[6], &s[7]); err != nil {
				return err
			}
			b.Value = fromHalves(s)
			out = append(out, b)
			return nil
		})
	return out, err
}

// fromHalves is Σ s[i]·2^(32i).
func fromHalves(s [8]int64) *big.Int {
	v := new(big.Int)
	for i := 7; i >= 0; i-- {
		v.Lsh(v, 32)
		v.Add(v, big.NewInt(s[i]))
	}
	return v
}
