package storage

import (
	"fmt"
	"strings"
)

// The query API's statements on the token transfer tables, under the read
// rules of read_queries.go: the newest version per key first (a subquery
// with LIMIT 1 BY the key), then is_canonical = 1 and any filter on a
// column outside the key, both outside the subquery, so that a filter
// never picks an older version of a row whose newest is a tombstone.

// transferKey is the part of the look-up tables' keys after the token or
// address, and of token_transfers' after chain_id.
const transferKey = "block_number, log_index, batch_index"

// transferReadColumns are read into a TokenTransfer (scanTransfer).
const transferReadColumns = "block_number, block_hash, toUInt32(timestamp), tx_hash, tx_index, log_index, batch_index," +
	" token_address, standard, operator, from_address, to_address, token_id, amount," +
	" amount_w0, amount_w1, amount_w2, amount_w3"

const transferPlainColumns = "block_number, block_hash, timestamp, tx_hash, tx_index, log_index, batch_index," +
	" token_address, standard, operator, from_address, to_address, token_id, amount," +
	" amount_w0, amount_w1, amount_w2, amount_w3"

// transferPositionsQuery lists transfer positions of a token
// (token_transfers_by_token) or of an address (address_transfers) in a
// height range, newest first or oldest first, strictly beyond a cursor,
// skipping offset rows; optionally only one standard, and for an address
// only one token.
type transferPositionsQuery struct {
	chainID  string
	byToken  bool   // the table: by token, else by address
	key      string // the token or the address
	token    string // by address: only this token ("" any)
	standard string // "" any
	from, to uint64
	desc     bool
	after    *TransferPosition
	limit    int
	offset   int
}

func (q transferPositionsQuery) toSQL() (string, []any) {
	table, keyCol := tableAddressTransfer, "address"
	if q.byToken {
		table, keyCol = tableTransfersByTok, "token_address"
	}
	args := []any{q.chainID, q.key, q.from, q.to}
	where := "chain_id = ? AND " + keyCol + " = ? AND block_number BETWEEN ? AND ?"
	if q.after != nil {
		op := ">"
		if q.desc {
			op = "<"
		}
		where += fmt.Sprintf(" AND (block_number %[1]s ? OR (block_number = ? AND (log_index %[1]s ? OR (log_index = ? AND batch_index %[1]s ?))))", op)
		args = append(args, q.after.Block, q.after.Block, q.after.Log, q.after.Log, q.after.Batch)
	}
	inner := transferKey + ", standard"
	if !q.byToken {
		inner += ", token_address"
	}
	sql := newestCanonical(transferKey, inner, table, where, transferKey)
	if q.standard != "" {
		sql += " AND standard = ?"
		args = append(args, q.standard)
	}
	if q.token != "" && !q.byToken {
		sql += " AND token_address = ?"
		args = append(args, q.token)
	}
	order := transferKey
	if q.desc {
		order = "block_number DESC, log_index DESC, batch_index DESC"
	}
	sql += " ORDER BY " + order + " LIMIT ?"
	args = append(args, q.limit)
	if q.offset > 0 {
		sql += " OFFSET ?"
		args = append(args, q.offset)
	}
	return sql, args
}

// transfersAtQuery reads the canonical transfers at positions, in order.
type transfersAtQuery struct {
	chainID   string
	positions []TransferPosition
}

func (q transfersAtQuery) toSQL() (string, []any) {
	cond, args := keysIn("log_index, batch_index", q.positions, func(p TransferPosition) (uint64, []any) {
		return p.Block, []any{p.Log, p.Batch}
	})
	return newestCanonical(transferReadColumns, transferPlainColumns, tableTokenTransfers, "chain_id = ? AND "+cond, transferKey) +
		" ORDER BY " + transferKey, append([]any{q.chainID}, args...)
}

// halves are the eight 32-bit halves of the amount words, least
// significant first: each fits an Int64 sum of up to 2^31 rows exactly.
var halves = func() [8]string {
	var h [8]string
	for i := 0; i < 4; i++ {
		h[2*i] = fmt.Sprintf("toInt64(bitAnd(amount_w%d, 4294967295))", i)
		h[2*i+1] = fmt.Sprintf("toInt64(bitShiftRight(amount_w%d, 32))", i)
	}
	return h
}()

// signedSums sums sign × every half, as s0..s7.
func signedSums(sign string) string {
	parts := make([]string, 8)
	for i, h := range halves {
		parts[i] = fmt.Sprintf("sum(%s * %s) AS s%d", sign, h, i)
	}
	return strings.Join(parts, ", ")
}

// normalized carries the sums s0..s7 into base-2^32 digits d0..d7 and a
// top carry c7 (negative for a negative balance): ordering by c7, d7 …
// d0 orders by the exact 256-bit balance, and a zero balance has them all
// zero. With t = s + the carry below, the digit is t's low 32 bits and
// the carry up is t shifted right by 32: the shift of an Int64 keeps its
// sign (floor(t / 2^32), on 18.16 and modern ClickHouse alike). Each
// carry names t once: ClickHouse substitutes an alias's expression where
// it is used, and the earlier form, intDiv(t - if(t < 0, …), …), named t
// twice, so c7 held 2^8 copies of s0 and analysing the statement took
// ~90 ms of the holders route's ~100 (an empty range cost the same).
func normalized() (defs []string, having, order string) {
	carry := "0"
	cols := []string{}
	for i := 0; i < 8; i++ {
		defs = append(defs, fmt.Sprintf("bitAnd((s%d + %s) AS t%d, 4294967295) AS d%d", i, carry, i, i))
		carry = fmt.Sprintf("(bitShiftRight(t%d, 32) AS c%d)", i, i)
		cols = append([]string{fmt.Sprintf("d%d DESC", i)}, cols...)
	}
	return defs, carry + " >= 0", "c7 DESC, " + strings.Join(cols, ", ")
}

// heldID groups ERC-1155 balances by id; ERC-20 and ERC-721 balances are
// one number per token (an ERC-721 one counts ids).
const heldID = "if(standard = 'erc1155', token_id, '')"

// tokenHoldersQuery ranks a token's holders by balance: per holder (and
// ERC-1155 id) what it received minus what it sent, over the canonical
// transfers of a height range, the largest first, positive ones only.
type tokenHoldersQuery struct {
	chainID  string
	token    string
	tokenID  string // ERC-1155: only this id ("" every id)
	from, to uint64
	limit    int
}

func (q tokenHoldersQuery) toSQL() (string, []any) {
	defs, having, order := normalized()
	inner := newestCanonical("from_address, to_address, standard, token_id, amount_w0, amount_w1, amount_w2, amount_w3",
		"from_address, to_address, standard, token_id, amount_w0, amount_w1, amount_w2, amount_w3",
		tableTransfersByTok, "chain_id = ? AND token_address = ? AND block_number BETWEEN ? AND ?", transferKey)
	args := []any{q.chainID, q.token, q.from, q.to}
	if q.tokenID != "" {
		inner += " AND token_id = ?"
		args = append(args, q.tokenID)
	}
	sql := "SELECT holder, standard, " + heldID + " AS id, " + signedSums("sign") + ", " + strings.Join(defs, ", ") +
		" FROM (" + inner + ") ARRAY JOIN [from_address, to_address] AS holder, [-1, 1] AS sign" +
		" GROUP BY holder, standard, id HAVING " + having + " AND (d0 + d1 + d2 + d3 + d4 + d5 + d6 + d7) > 0" +
		" ORDER BY " + order + ", holder LIMIT ?"
	return sql, append(args, q.limit)
}

// addressBalancesQuery sums an address's balances per token (and ERC-1155
// id) over its canonical transfers of a height range; only one token
// when token is set.
type addressBalancesQuery struct {
	chainID  string
	address  string
	token    string
	from, to uint64
}

func (q addressBalancesQuery) toSQL() (string, []any) {
	inner := newestCanonical("token_address, standard, token_id, is_from, is_to, amount_w0, amount_w1, amount_w2, amount_w3",
		"token_address, standard, token_id, is_from, is_to, amount_w0, amount_w1, amount_w2, amount_w3",
		tableAddressTransfer, "chain_id = ? AND address = ? AND block_number BETWEEN ? AND ?", transferKey)
	args := []any{q.chainID, q.address, q.from, q.to}
	if q.token != "" {
		inner += " AND token_address = ?"
		args = append(args, q.token)
	}
	return "SELECT token_address, standard, " + heldID + " AS id, " + signedSums("(toInt64(is_to) - toInt64(is_from))") +
		" FROM (" + inner + ") GROUP BY token_address, standard, id" +
		" ORDER BY token_address, standard, id", args
}
