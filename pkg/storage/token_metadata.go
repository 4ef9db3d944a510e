package storage

import (
	"context"
	"fmt"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// token_metadata (migration 0047): a token's name, symbol, decimals and
// total supply, asked of its contract once by the TokenMetadata workflow
// (pkg/indexer/jobs/tokenmeta), which walks the transfers in
// height order behind the watermark (StateTokenMetadataHeight) and asks
// only about tokens it has no row for.

const tableTokenMetadata = "token_metadata"

// StateTokenMetadataHeight is the chain_state key of the height up to
// which every token with a transfer has a token_metadata row.
const StateTokenMetadataHeight = "token_metadata_height"

var tokenMetadataColumns = []string{
	"chain_id", "token_address", "standard", "name", "symbol", "name_encoding", "decimals", "has_decimals",
	"total_supply", "total_supply_height", "fetched_at", "version",
}

// TokenMetadata is one token's row.
type TokenMetadata struct {
	Token    string
	Standard string
	Name     string
	Symbol   string
	// NameEncoding is how name and symbol were answered: "string",
	// "bytes32" or "" (not at all).
	NameEncoding string
	Decimals     uint8
	HasDecimals  bool
	// TotalSupply is decimal, "" when not answered, as of
	// TotalSupplyHeight.
	TotalSupply       string
	TotalSupplyHeight uint64
	FetchedAt         time.Time
}

// SeenToken is a token with transfers in a range, and the standard of
// one of them.
type SeenToken struct {
	Token    string
	Standard string
	// FirstHeight is the lowest height of its transfers in the range, and
	// FirstWritten when the earliest written of them was written (the
	// version of its row: the writer's wall clock). A transfer is shown
	// only after it was written, so the time since FirstWritten bounds how
	// long the token has been shown without its metadata.
	FirstHeight  uint64
	FirstWritten time.Time
}

// tokensInRangeQuery lists the distinct tokens with transfer rows in a
// height range. Versions are not collapsed: a token only an orphaned
// transfer named gets metadata too, which is harmless.
type tokensInRangeQuery struct {
	chainID  string
	from, to uint64
}

func (q tokensInRangeQuery) toSQL() (string, []any) {
	return "SELECT token_address, any(standard), min(block_number), min(version) FROM token_transfers WHERE chain_id = ? AND block_number BETWEEN ? AND ?" +
		" AND is_canonical = 1 GROUP BY token_address ORDER BY token_address", []any{q.chainID, q.from, q.to}
}

// TokensInRange lists the tokens with transfers in [from, to].
func (c *Tokens) TokensInRange(ctx context.Context, chainID string, from, to uint64) ([]SeenToken, error) {
	var out []SeenToken
	err := c.query(ctx, fmt.Sprintf("reading the tokens of %s of chain %q in [%d, %d]", tableTokenTransfers, chainID, from, to),
		tokensInRangeQuery{chainID, from, to}, func(r driver.Rows) error {
			var t SeenToken
			var version uint64
			err := r.Scan(&t.Token, &t.Standard, &t.FirstHeight, &version)
			t.FirstWritten = time.Unix(0, int64(version)).UTC()
			out = append(out, t)
			return err
		})
	return out, err
}

// tokenMetadataQuery reads the newest row of a few tokens.
type tokenMetadataQuery struct {
	chainID string
	tokens  []string
}

func (q tokenMetadataQuery) toSQL() (string, []any) {
	args := make([]any, 0, 1+len(q.tokens))
	args = append(args, q.chainID)
	for _, t := range q.tokens {
		args = append(args, t)
	}
	return "SELECT token_address, argMax(standard, version), argMax(name, version), argMax(symbol, version)," +
		" argMax(name_encoding, version), argMax(decimals, version), argMax(has_decimals, version)," +
		" argMax(total_supply, version), argMax(total_supply_height, version), toUInt32(argMax(fetched_at, version))" +
		" FROM token_metadata WHERE chain_id = ? AND token_address IN (" + placeholders(len(q.tokens)) + ")" +
		" GROUP BY token_address", args
}

// readTokenMetadata reads the rows of tokens that have one.
func (d *db) readTokenMetadata(ctx context.Context, chainID string, tokens []string) (map[string]TokenMetadata, error) {
	out := make(map[string]TokenMetadata, len(tokens))
	for len(tokens) > 0 {
		batch := tokens[:min(len(tokens), 1000)]
		tokens = tokens[len(batch):]
		err := d.query(ctx, fmt.Sprintf("reading %s of chain %q", tableTokenMetadata, chainID),
			tokenMetadataQuery{chainID, batch}, func(r driver.Rows) error {
				var m TokenMetadata
				var hasDecimals uint8
				var fetched uint32
				if err := r.Scan(&m.Token, &m.Standard, &m.Name, &m.Symbol, &m.NameEncoding, &m.Decimals, &hasDecimals,
					&m.TotalSupply, &m.TotalSupplyHeight, &fetched); err != nil {
					return err
				}
				m.HasDecimals = hasDecimals == 1
				m.FetchedAt = time.Unix(int64(fetched), 0).UTC()
				out[m.Token] = m
				return nil
			})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// TokenMetadata returns the metadata rows of the tokens that have one.
func (c *Tokens) TokenMetadata(ctx context.Context, chainID string, tokens []string) (map[string]TokenMetadata, error) {
	return c.readTokenMetadata(ctx, chainID, tokens)
}

// TokenMetadata returns the metadata rows of the tokens that have one.
func (c *TokenReader) TokenMetadata(ctx context.Context, chainID string, tokens []string) (map[string]TokenMetadata, error) {
	return c.readTokenMetadata(ctx, chainID, tokens)
}

// WriteTokenMetadata stores rows (one insert; a token written again gets
// a newer version).
func (c *Tokens) WriteTokenMetadata(ctx context.Context, chainID string, ms []TokenMetadata) error {
	if len(ms) == 0 {
		return nil
	}
	version := c.clock.next()
	rows := make([][]any, 0, len(ms))
	for _, m := range ms {
		rows = append(rows, []any{chainID, m.Token, m.Standard, m.Name, m.Symbol, m.NameEncoding, m.Decimals,
			flag(m.HasDecimals), m.TotalSupply, m.TotalSupplyHeight, m.FetchedAt, version})
	}
	if err := c.insert(ctx, insertStmt{tableTokenMetadata, tokenMetadataColumns}, rows); err != nil {
		return fmt.Errorf("storage: writing %s for chain %q: %w", tableTokenMetadata, chainID, err)
	}
	return nil
}
