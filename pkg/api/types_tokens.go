package api

import (
	"context"
	"math/big"

	"github.com/tideline-dev/tideline/pkg/chaindata"
	"github.com/tideline-dev/tideline/pkg/storage"
	"github.com/tideline-dev/tideline/pkg/stream"
	"github.com/tideline-dev/tideline/pkg/tokens"
)

// The token answers' objects (docs/openapi.json: TokenTransfer, Token,
// TokenHolders, AddressTokens). Amounts and ids are decimal strings
// (uint256).

// TokenStore is what the token routes read (*storage.TokenReader).
type TokenStore interface {
	TokenTransferPositions(ctx context.Context, chainID string, q storage.TransferQuery) ([]storage.TransferPosition, error)
	AddressTransferPositions(ctx context.Context, chainID string, q storage.TransferQuery) ([]storage.TransferPosition, error)
	TransfersAt(ctx context.Context, chainID string, ps []storage.TransferPosition) ([]storage.TokenTransfer, error)
	TransferTxsAt(ctx context.Context, chainID string, ps []storage.Position) ([]chaindata.Transaction, error)
	TokenHolders(ctx context.Context, chainID, token, tokenID string, from, to uint64, limit int) ([]storage.Balance, error)
	AddressBalances(ctx context.Context, chainID, address, token string, from, to uint64) ([]storage.Balance, error)
	TokenMetadata(ctx context.Context, chainID string, tokens []string) (map[string]storage.TokenMetadata, error)
}

// TokenInfo is a token's metadata as its contract answered, null fields
// for what it did not answer (or before it was asked: metadata_status
// "pending").
type TokenInfo struct {
	Address           string  `json:"address"`
	Standard          *string `json:"standard"`
	MetadataStatus    string  `json:"metadata_status"` // fetched, pending
	Name              *string `json:"name"`
	Symbol            *string `json:"symbol"`
	NameEncoding      *string `json:"name_encoding"` // string, bytes32; null: not answered
	Decimals          *uint8  `json:"decimals"`
	TotalSupply       *string `json:"total_supply"`
	TotalSupplyHeight *uint64 `json:"total_supply_height"`
	FetchedAt         *int64  `json:"fetched_at"`
}

func tokenInfoOf(address string, m *storage.TokenMetadata) TokenInfo {
	info := TokenInfo{Address: address, MetadataStatus: "pending"}
	if m == nil {
		return info
	}
	info.MetadataStatus = "fetched"
	info.Standard = stream.Optional(m.Standard)
	info.Name, info.Symbol, info.NameEncoding = stream.Optional(m.Name), stream.Optional(m.Symbol), stream.Optional(m.NameEncoding)
	if m.HasDecimals {
		d := m.Decimals
		info.Decimals = &d
	}
	if m.TotalSupply != "" {
		s, h := m.TotalSupply, m.TotalSupplyHeight
		info.TotalSupply, info.TotalSupplyHeight = &s, &h
	}
	at := m.FetchedAt.Unix()
	info.FetchedAt = &at
	return info
}

// tokenPage is a page of transfers with the metadata of the tokens on it
// (by address; a token not asked yet is absent).
type tokenPage struct {
	Items      []stream.TokenTransfer `json:"items"`
	NextCursor *string                `json:"next_cursor"`
	Watermark  uint64                 `json:"watermark"`
	Tokens     map[string]TokenInfo   `json:"tokens"`
}

// Holding is a balance: of one holder (a token's holders) or of one token
// (an address's tokens).
type Holding struct {
	Holder   string `json:"holder"`
	Token    string `json:"token"`
	Standard string `json:"standard"`
	// TokenID is ERC-1155's id; null for ERC-20 and ERC-721, whose
	// balance counts every id.
	TokenID *string `json:"token_id"`
	Balance string  `json:"balance"`
}

func holdingOf(b storage.Balance) Holding {
	return Holding{Holder: b.Holder, Token: b.Token, Standard: b.Standard, TokenID: stream.Optional(b.TokenID), Balance: b.Value.String()}
}

// Balances is a list of derived balances and what they were summed over.
type Balances struct {
	Items []Holding `json:"items"`
	// CountedFrom and CountedTo are the heights whose canonical transfers
	// were summed: the start height (or above the pruned height) to the
	// watermark.
	CountedFrom uint64 `json:"counted_from"`
	CountedTo   uint64 `json:"counted_to"`
	// Derived is always true: the balances are sums of Transfer events,
	// not the contracts' balanceOf (see docs/querying.md).
	Derived bool                 `json:"derived"`
	Tokens  map[string]TokenInfo `json:"tokens"`
}

// positive keeps the balances above zero.
func positive(bs []storage.Balance) []storage.Balance {
	out := bs[:0]
	for _, b := range bs {
		if b.Value.Cmp(big.NewInt(0)) > 0 {
			out = append(out, b)
		}
	}
	return out
}

// tokenInfos reads the metadata of the distinct tokens given.
func (c chainReq) tokenInfos(addrs []string) (map[string]TokenInfo, *apiError) {
	out := map[string]TokenInfo{}
	var distinct []string
	seen := map[string]bool{}
	for _, a := range addrs {
		if !seen[a] {
			seen[a] = true
			distinct = append(distinct, a)
		}
	}
	if len(distinct) == 0 {
		return out, nil
	}
	ms, err := c.s.store.Tokens.TokenMetadata(c.r.Context(), c.id, distinct)
	if err != nil {
		return nil, fromStore(err)
	}
	for a, m := range ms {
		out[a] = tokenInfoOf(a, &m)
	}
	return out, nil
}

// isStandard tells the standards a filter may name.
func isStandard(s string) bool {
	for _, x := range tokens.Standards {
		if s == x {
			return true
		}
	}
	return false
}
