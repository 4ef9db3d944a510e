package api

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"slices"

	"github.com/tideline-dev/tideline/pkg/storage"
	"github.com/tideline-dev/tideline/pkg/stream"
)

// Tokens: a token's metadata, transfers and holders; an address's
// transfers and token balances. Transfers come from the look-up tables
// (token_transfers_by_token, address_transfers), read from token_transfers
// at their positions and checked; balances are sums of the canonical
// transfers from the start height to the watermark (pkg/storage
// transfers_queries.go), so a chain with pruned heights has none (410).

// Kinds of the transfer listings' cursors.
const (
	cursorTokenTransfers   = "token-transfers"
	cursorAddressTransfers = "address-transfers"
)

func encodeTransferCursor(kind string, p storage.TransferPosition) string {
	b, _ := json.Marshal(cursor{Kind: kind, Block: p.Block, Index: p.Log, Batch: p.Batch})
	return base64.RawURLEncoding.EncodeToString(b)
}

func (p params) transferCursor(kind string) (*storage.TransferPosition, *apiError) {
	c, e := p.rawCursor(kind)
	if c == nil || e != nil {
		return nil, e
	}
	return &storage.TransferPosition{Block: c.Block, Log: c.Index, Batch: c.Batch}, nil
}

func (s *Server) tokenTransfers(r *http.Request) (any, *apiError) { return s.transferList(r, true) }

func (s *Server) addressTransfers(r *http.Request) (any, *apiError) { return s.transferList(r, false) }

// transferList is a page of a token's (byToken) or an address's
// transfers, newest first.
func (s *Server) transferList(r *http.Request, byToken bool) (any, *apiError) {
	names := []string{"from", "to", "standard", "limit", "cursor"}
	kind := cursorTokenTransfers
	if !byToken {
		names, kind = append(names, "token"), cursorAddressTransfers
	}
	q, e := s.request(r, pathAddress, names...)
	if e != nil {
		return nil, e
	}
	tq := storage.TransferQuery{Desc: true}
	if byToken {
		tq.Token = q.address
	} else {
		tq.Address = q.address
	}
	if q.p.has("standard") {
		if tq.Standard = q.p.get("standard"); !isStandard(tq.Standard) {
			return nil, badParam("standard", "%q is none of erc20, erc721, erc1155", clip(tq.Standard))
		}
	}
	if q.p.has("token") {
		if tq.Token, e = parseAddress("token", q.p.get("token")); e != nil {
			return nil, e
		}
	}
	w, e := q.window()
	if e != nil {
		return nil, e
	}
	limit, e := q.p.limit(defaultPage, s.cfg.MaxPageSize)
	if e != nil {
		return nil, e
	}
	if tq.After, e = q.p.transferCursor(kind); e != nil {
		return nil, e
	}
	v, e := q.viewOf()
	if e != nil {
		return nil, e
	}
	var ok bool
	if tq.From, tq.To, ok, e = w.clip(v); e != nil {
		return nil, e
	}
	out := tokenPage{Items: []stream.TokenTransfer{}, Watermark: v.Watermark, Tokens: map[string]TokenInfo{}}
	if !ok {
		return out, nil
	}
	tq.Limit = limit + 1
	list := s.store.Tokens.AddressTransferPositions
	if byToken {
		list = s.store.Tokens.TokenTransferPositions
	}
	ps, err := list(r.Context(), q.id, tq)
	if err != nil {
		return nil, fromStore(err)
	}
	more := len(ps) > limit
	if more {
		ps = ps[:limit]
	}
	ts, err := s.store.Tokens.TransfersAt(r.Context(), q.id, ps)
	if err != nil {
		return nil, fromStore(err)
	}
	var addrs []string
	for _, t := range slices.Backward(ts) { // newest first
		if matchesTransfer(t, tq) {
			out.Items = append(out.Items, stream.TransferOf(t))
			addrs = append(addrs, t.Token)
		}
	}
	if more {
		c := encodeTransferCursor(kind, ps[len(ps)-1])
		out.NextCursor = &c
	}
	if out.Tokens, e = q.tokenInfos(addrs); e != nil {
		return nil, e
	}
	return out, nil
}

// matchesTransfer checks a transfer read at a look-up row's position
// against what the listing asked: a look-up row of a write that failed
// half-way may point at a position holding another transfer.
func matchesTransfer(t storage.TokenTransfer, q storage.TransferQuery) bool {
	if q.Address != "" && t.From != q.Address && t.To != q.Address {
		return false
	}
	if q.Token != "" && t.Token != q.Token {
		return false
	}
	return q.Standard == "" || t.Standard == q.Standard
}

// token answers a token's metadata: 404 when it has neither metadata nor
// a transfer at or below the watermark.
func (s *Server) token(r *http.Request) (any, *apiError) {
	q, e := s.request(r, pathAddress)
	if e != nil {
		return nil, e
	}
	ms, err := s.store.Tokens.TokenMetadata(r.Context(), q.id, []string{q.address})
	if err != nil {
		return nil, fromStore(err)
	}
	if m, ok := ms[q.address]; ok {
		return tokenInfoOf(q.address, &m), nil
	}
	v, e := q.viewOf()
	if e != nil {
		return nil, e
	}
	info := tokenInfoOf(q.address, nil)
	if v.HasWatermark {
		ps, err := s.store.Tokens.TokenTransferPositions(r.Context(), q.id, storage.TransferQuery{
			Token: q.address, From: v.Lowest(), To: v.Watermark, Limit: 1})
		if err != nil {
			return nil, fromStore(err)
		}
		ts, err := s.store.Tokens.TransfersAt(r.Context(), q.id, ps)
		if err != nil {
			return nil, fromStore(err)
		}
		for _, t := range ts {
			if t.Token == q.address {
				info.Standard = &t.Standard
				return info, nil
			}
		}
	}
	return nil, notFound("no transfer of token %s is indexed (watermark %d)", q.address, v.Watermark)
}

// balanceView is the view of a balance route: balances need every
// transfer, so a chain with pruned heights has none.
func (q *restReq) balanceView() (view, *apiError) {
	v, e := q.viewOf()
	if e != nil {
		return view{}, e
	}
	if v.HasPruned && v.Pruned >= v.Start {
		return view{}, &apiError{Status: http.StatusGone, Code: codeGone, Message: fmt.Sprintf(
			"balances are sums of every transfer, and heights up to %d are pruned from this index", v.Pruned)}
	}
	return v, nil
}

func (s *Server) tokenHolders(r *http.Request) (any, *apiError) {
	q, e := s.request(r, pathAddress, "token_id", "limit")
	if e != nil {
		return nil, e
	}
	id := ""
	if q.p.has("token_id") {
		var ok bool
		if id, ok = uint256Text(q.p.get("token_id")); !ok {
			return nil, badParam("token_id", "%q is not a decimal token id (0 to 2^256-1)", clip(q.p.get("token_id")))
		}
	}
	limit, e := q.p.limit(defaultPage, s.cfg.MaxPageSize)
	if e != nil {
		return nil, e
	}
	v, e := q.balanceView()
	if e != nil {
		return nil, e
	}
	out := Balances{Items: []Holding{}, CountedFrom: v.Lowest(), CountedTo: v.Watermark, Derived: true}
	if v.HasWatermark {
		bs, err := s.store.Tokens.TokenHolders(r.Context(), q.id, q.address, id, v.Lowest(), v.Watermark, limit)
		if err != nil {
			return nil, fromStore(err)
		}
		for _, b := range bs {
			out.Items = append(out.Items, holdingOf(b))
		}
	}
	if out.Tokens, e = q.tokenInfos([]string{q.address}); e != nil {
		return nil, e
	}
	return out, nil
}

func (s *Server) addressTokens(r *http.Request) (any, *apiError) {
	q, e := s.request(r, pathAddress, "token")
	if e != nil {
		return nil, e
	}
	token := ""
	if q.p.has("token") {
		if token, e = parseAddress("token", q.p.get("token")); e != nil {
			return nil, e
		}
	}
	v, e := q.balanceView()
	if e != nil {
		return nil, e
	}
	out := Balances{Items: []Holding{}, CountedFrom: v.Lowest(), CountedTo: v.Watermark, Derived: true}
	var addrs []string
	if v.HasWatermark {
		bs, err := s.store.Tokens.AddressBalances(r.Context(), q.id, q.address, token, v.Lowest(), v.Watermark)
		if err != nil {
			return nil, fromStore(err)
		}
		for _, b := range positive(bs) {
			out.Items = append(out.Items, holdingOf(b))
			addrs = append(addrs, b.Token)
		}
	}
	if out.Tokens, e = q.tokenInfos(addrs); e != nil {
		return nil, e
	}
	return out, nil
}

// uint256Text reads a decimal uint256 and writes it as stored (no
// leading zeros).
func uint256Text(s string) (string, bool) {
	if s == "" || len(s) > 80 {
		return "", false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return "", false
		}
	}
	n, ok := new(big.Int).SetString(s, 10)
	if !ok || n.BitLen() > 256 {
		return "", false
	}
	return n.String(), true
}
