package tokenmeta

import (
	"context"

	"github.com/tideline-dev/tideline/pkg/storage"
)

// Store is what the job reads and writes (*storage.Tokens): the
// watermark and its own height in chain_state, the tokens that moved in a
// range, and the metadata rows.
type Store interface {
	SaveState(ctx context.Context, chainID, key string, value uint64) error
	LoadState(ctx context.Context, chainID, key string) (uint64, bool, error)
	TokensInRange(ctx context.Context, chainID string, from, to uint64) ([]storage.SeenToken, error)
	TokenMetadata(ctx context.Context, chainID string, tokens []string) (map[string]storage.TokenMetadata, error)
	WriteTokenMetadata(ctx context.Context, chainID string, ms []storage.TokenMetadata) error
}

var _ Store = (*storage.Tokens)(nil)
